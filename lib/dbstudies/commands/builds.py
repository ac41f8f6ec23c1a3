"""Commands over a series of server builds: measure each against a reference and find where
the numbers changed (`history`), or bisect between a good and a bad build (`bisect`)."""
from __future__ import annotations

import argparse
from pathlib import Path

from .kit import Argument, Command, arg, cluster_args, parameter


def series_args() -> list[Argument]:
    """What `history` and `bisect` share: the series' name, its builds in order, profile, parameters."""
    return [arg("--name", default="series", help="the series' folder under data/series (default: series)"),
            arg("--builds", nargs="+", default=None, metavar="BUILD",
                help="the builds in order (flavours: names or .toml files; `servers add` makes a build directory one)"),
            arg("--from-dir", type=Path, default=None, metavar="DIR",
                help="a folder of build prefixes (release tarballs, install prefixes, build trees), one a subfolder: "
                     "each made a flavour under data/series/NAME/builds/ (instead of --builds)"),
            arg("--order", default=None, metavar="FILE|version|name",
                help="a file naming the builds (or --from-dir's subfolders) in order, one a line; with --from-dir "
                     "also `version` (the version each binary prints, then name; the default) or `name`"),
            arg("--profile", default="quick", choices=("smoke", "quick", "full", "count"),
                help="smoke (seconds), quick (48 pairs, then to a QPS MDE of 4 %%: 6–15 min a build), full (two cells, "
                     "3 %%, ≤ 1 h a build), count (instructions per transaction under valgrind, 1 client thread: "
                     "±0.05 %%, ≈ 1 min a build)"),
            parameter("a versions-study parameter for every run of the series, e.g. -p threads '[64]'")]


def given(args: argparse.Namespace) -> dict:
    return {"builds": args.builds, "order": args.order, "folder": args.from_dir}


def history(args: argparse.Namespace) -> int:
    from ..workflows import cluster
    from ..workflows import history as builds_history
    from ..workflows.runner import parameters
    return builds_history.main(args.name, args.reference, args.profile, parameters(args.parameter), **given(args),
                               scheduler=cluster.access(args.scheduler, tls_dir=args.tls_dir, insecure=args.insecure))


def bisect(args: argparse.Namespace) -> int:
    from ..workflows import bisection, series
    from ..workflows import history as builds_history
    from ..workflows.runner import parameters
    code = bisection.main(args.name, args.profile, parameters(args.parameter), args.good, args.bad, **given(args))
    print(f"report: {builds_history.rewrite(series.SERIES_DIR / args.name)}")  # the series' (with its history's effects)
    return code


COMMANDS = [
    Command("history", "measure an ordered series of server builds, each against one reference build (paired, to "
                       "a precision target), find the change points and write the series' report "
                       "(data/series/NAME/report.html); builds measured once are not measured again", [
        *series_args(),
        arg("--reference", required=True,
            help="the build every build is measured against (a flavour, or with --from-dir one of its subfolders)"),
        arg("--scheduler", default=None, metavar="ADDRESS",
            help="measure the builds as one Dask sweep on the benchmark hosts of this scheduler (`dbstudies worker`; "
                 "the builds' flavour files and directories at the same paths there)"), *cluster_args()], history),
    Command("bisect", "find where between a good and a bad build the numbers changed: measure the midpoint "
                      "against both ends until the precision says which side it is on, then go on in that half", [
        *series_args(),
        arg("--good", required=True, help="the build before the change (in the order)"),
        arg("--bad", required=True, help="the build after it")], bisect),
]
