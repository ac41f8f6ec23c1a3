"""Commands on a study: run it, plan it, list the studies and their parameters, (re)render a
run's report, open JupyterLab on the notebooks."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..kit import contract, study
from ..store.params import PROFILES, fields, meanings, profile_values
from .kit import Command, arg, kernel, parameter, runs_dir, study_arg


def run(args: argparse.Namespace) -> int:
    from ..workflows import runner
    return runner.execute(args.study, args.profile, args.parameter, args.runs_dir, args.kernel, args.verbose)


def plan(args: argparse.Namespace) -> int:
    from ..workflows import planner
    from ..workflows.runner import parameters
    for line in planner.plan(args.study, args.profile, parameters(args.parameter), args.runs_dir,
                             allow_pilot=not args.no_pilot,
                             say=lambda m: print(f"dbstudies: {m}", file=sys.stderr, flush=True)):
        print(line)
    return 0


def listing(args: argparse.Namespace) -> int:
    """Studies and their parameters: each one's quick value, smoke and full where they
    differ, and what it means (the study READMEs' tables say the same; `--write-readme` writes them)."""
    if args.write_readme:
        from ..workflows import generated
        for line in generated.write_all():
            print(f"dbstudies: {line}")
        return 0
    for ref in [args.study] if args.study else study.names():
        s = study.load(ref)
        words = meanings(s.Params)
        print(f"{contract.study_name(s)}: {contract.title(s)}")
        every = {p: profile_values(s.Params, s.PROFILES, p) for p in PROFILES}
        for field in fields(s.Params):
            values = {p: every[p][field] for p in PROFILES}
            others = "".join(f", {p}: {v!r}" for p, v in values.items() if p != "quick" and v != values["quick"])
            print(f"  {field} (quick: {values['quick']!r}{others}) — {words.get(field, '')}")
    return 0


def report(args: argparse.Namespace) -> int:
    from ..report.render import render
    from ..store import archive
    from ..workflows import runner
    done = runner.variant_of(archive.open_run(args.run_dir), args.parameter)
    if args.analyse or not done.notebook.exists():
        print(f"dbstudies: executing the {done.study or 'study'} notebook on the run's "
              f"{done.status} steps", file=sys.stderr, flush=True)
        runner.analyse(done, args.kernel, args.verbose)
    print(render(done))
    return 0


def lab(args: argparse.Namespace) -> int:
    from ..kernel import lab as jupyterlab
    return jupyterlab.main(args.port)


COMMANDS = [
    Command("run", "run a study end to end and render its report", [
        study_arg(), arg("--profile", default="quick",
                         help="smoke (seconds), quick (minutes, default), full (hours); a study may have "
                              "more (the scaling faces: count, by the server's instructions)"),
        parameter("override a parameter, e.g. -p threads '[1,8,64]'"),
        runs_dir("where run directories are created (default: data/runs)"), *kernel()], run),
    Command("plan", "before running: the expected wall time and the minimum detectable effect of each table, "
                    "from this host's earlier runs (or a pilot)", [
        study_arg(), arg("--profile", default="quick"), parameter(),
        runs_dir("where earlier runs are, and where a pilot run goes (default: data/runs)"),
        arg("--no-pilot", action="store_true",
            help="never measure: without earlier runs, say so instead of running a pilot")], plan),
    Command("list", "list studies and their parameters: values per profile, meanings", [
        arg("study", nargs="?", help="one study (a name or a study's folder); default: every built-in"),
        arg("--write-readme", action="store_true",
            help="write the built-in studies' parameter tables into their README.md, their notebooks' "
                 "parameters cells, and what `make study` prints into README.md")], listing),
    Command("report", "(re)render a run's report.html; a run without an executed notebook (measured from "
                      "JupyterLab) gets one first", [
        arg("run_dir", type=Path),
        arg("--analyse", action="store_true", help="execute the notebook on the run's steps again, even if it has one"),
        parameter("re-analyse at another analysis parameter (e.g. -p draw_threshold 0.02): a variant of "
                  "its own in the run, its report beside the run's"), *kernel()], report),
    Command("lab", "JupyterLab on notebooks/: what you save of a study notebook goes to a working copy under "
                   "data/lab/, never into the tracked notebook", [arg("--port", type=int, default=None)], lab),
]
