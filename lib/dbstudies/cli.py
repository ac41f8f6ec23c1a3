"""`dbstudies run <study> …`: validate parameters, execute the study's notebook through
papermill into a new run directory, render its report.

    dbstudies run thread_pool --profile smoke -p threads '[1,8,64]' -p duration 5
    dbstudies list
    dbstudies report data/runs/thread_pool/<run-id>
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from . import paths, study
from .errors import DbStudiesError
from .params import PROFILES, fields

EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="dbstudies", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a study end to end and render its report")
    run.add_argument("study", help=f"one of: {', '.join(study.names())}")
    run.add_argument("--profile", default="quick", choices=PROFILES,
                     help="smoke (seconds), quick (minutes, default), full (hours)")
    run.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                     metavar=("NAME", "VALUE"), help="override a parameter, e.g. -p threads '[1,8,64]'")
    run.add_argument("--runs-dir", type=Path, default=paths.RUNS_DIR,
                     help="where run directories are created (default: data/runs)")
    run.add_argument("--kernel", default=None, help="Jupyter kernel (default: dbstudies, else python3)")
    sub.add_parser("list", help="list studies and their parameters")
    rep = sub.add_parser("report", help="(re)render a run's report.html from its notebook")
    rep.add_argument("run_dir", type=Path)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _dispatch(args)
    except DbStudiesError as e:  # a problem we diagnosed: its message, no traceback
        print(f"dbstudies: {e}", file=sys.stderr)
        return EXIT_USAGE


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "list":
        return _list()
    from . import runner
    if args.command == "report":
        from .results import Run
        print(runner.render_report(Run.open(args.run_dir)))
        return 0
    return runner.execute(args.study, args.profile, args.parameter, args.runs_dir, args.kernel)


def _list() -> int:
    """Studies and their parameters (quick profile's values), without importing pandas."""
    for name in study.names():
        s = study.load(name)
        print(f"{name}: {s.title}")
        for field in fields(s.Params):
            print(f"  {field} (quick: {s.PROFILES['quick'][field]!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
