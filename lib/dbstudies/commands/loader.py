"""The loader: every group's commands (`GROUPS`, in the order `dbstudies -h` lists them) in one
parser, and `main`, which runs the command asked for."""
from __future__ import annotations

import argparse
import faulthandler
import os
import signal
import sys
from typing import Sequence

from ..core.errors import DbStudiesError
from . import builds, runs, servers, studies, sweeps
from .kit import Command

EXIT_USAGE = 2
GROUPS = (studies, runs, servers, builds, sweeps)
COMMANDS: dict[str, Command] = {c.name: c for group in GROUPS for c in group.COMMANDS}
DESCRIPTION = ("`dbstudies run <study> …`: validate parameters, execute the study's notebook through "
               "papermill into a new run directory, render its report.")


def parser() -> argparse.ArgumentParser:
    """The command line, built from every group's `COMMANDS`."""
    ap = argparse.ArgumentParser(prog="dbstudies", description=DESCRIPTION)
    sub = ap.add_subparsers(dest="command", required=True)
    for c in COMMANDS.values():
        command = sub.add_parser(c.name, help=c.help)
        for flags, kw in c.arguments:
            command.add_argument(*flags, **kw)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # the command line: `kill -USR1 PID` prints where a stuck command is (every
        faulthandler.register(signal.SIGUSR1, all_threads=True)  # thread), and in its kernels
        os.environ["DBSTUDIES_STACKS_ON_USR1"] = "1"  # too (dbstudies/__init__.py)
    args = parser().parse_args(argv)
    try:
        return COMMANDS[args.command].run(args)
    except DbStudiesError as e:  # a problem we diagnosed: its message, no traceback
        print(f"dbstudies: {e}", file=sys.stderr)
        return EXIT_USAGE
