"""What every command module is written with: `Command` — a command's name, help, arguments
and what it runs, declared once, side by side — and the arguments several commands share."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..core import paths
from ..kit import study

Argument = tuple[tuple[str, ...], dict[str, Any]]


@dataclass(frozen=True)
class Command:
    """One `dbstudies` command: `name`, its `help` (as `dbstudies -h` lists it), its
    `arguments` (argparse's flags and keywords each) and `run`, which takes the parsed
    arguments and returns the exit code."""
    name: str
    help: str
    arguments: list[Argument]
    run: Callable[[argparse.Namespace], int]


def arg(*flags: str, **kw: Any) -> Argument:
    return flags, kw


def study_arg() -> Argument:
    return arg("study", help=f"one of: {', '.join(study.names())}")


def runs_dir(help: str = "where run directories are (default: data/runs)") -> Argument:
    return arg("--runs-dir", type=Path, default=paths.RUNS_DIR, help=help)


def parameter(help: str = "as for `run`") -> Argument:
    return arg("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"), help=help)


def kernel() -> list[Argument]:
    return [arg("--kernel", default=None, help="Jupyter kernel (default: dbstudies, else python3)"),
            arg("-v", "--verbose", action="store_true",
                help="show the notebook's output as it runs (default: a progress bar)")]


def cluster_args() -> list[Argument]:
    """How a scheduler, worker or client of a sweep's cluster proves it belongs (`cluster`)."""
    return [arg("--tls-dir", type=Path, default=None, metavar="DIR",
                help="the cluster's certificates (default: data/tls; `dbstudies scheduler` makes them)"),
            arg("--insecure", action="store_true",
                help="plain tcp:// without encryption or authentication: the loopback only (tests, one machine)")]


def say(m: str) -> None:
    print(f"dbstudies: {m}", flush=True)
