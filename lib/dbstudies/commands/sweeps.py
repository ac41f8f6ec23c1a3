"""Commands of a sweep: run a study over a grid of parameter sets, here or on Dask workers,
and the scheduler and workers of such a cluster."""
from __future__ import annotations

import argparse
import signal
from pathlib import Path

from ..core import paths
from ..kit import contract, study
from .kit import Command, arg, cluster_args, runs_dir, study_arg


def interruptible() -> None:
    """Ctrl-C (SIGINT) ends each of these even when it was started with SIGINT ignored, as a
    background job of a non-interactive shell is (bash does that): `kill -INT` must work (a
    scheduler and a worker started so outlived SIGINT: the suite waited 2 × 30 s on them)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def scheduler(args: argparse.Namespace) -> int:
    from ..workflows import cluster
    interruptible()
    return cluster.serve(args.port, args.host, args.dashboard, tls_dir=args.tls_dir, insecure=args.insecure)


def worker(args: argparse.Namespace) -> int:
    from ..workflows import cluster
    interruptible()
    return cluster.join(cluster.access(args.scheduler, tls_dir=args.tls_dir, insecure=args.insecure),
                        args.local_directory, args.name)


def sweep(args: argparse.Namespace) -> int:
    from ..workflows import cluster, grid
    from ..workflows import sweep as sweeps
    interruptible()
    way = cluster.access(args.scheduler, tls_dir=args.tls_dir, insecure=args.insecure)
    jobs = grid.expand(args.study, grid.load_grid(args.grid))
    s = sweeps.Sweep(contract.study_name(study.load(args.study)), jobs, args.runs_dir, args.sweeps_dir,
                     say=lambda m: print(f"dbstudies: {m}", flush=True))
    code = 0
    try:
        s.run_on(way) if way else s.run_here()
    except KeyboardInterrupt:
        code = 130
    print(s.summary())
    print(f"dbstudies: index {s.index()}")
    return code or (0 if all(r["status"] == "complete" for r in s.records) else 1)


COMMANDS = [
    Command("sweep", "run a study over a grid of parameter sets (YAML), here one after another or on Dask "
                     "workers (--scheduler)", [
        study_arg(),
        arg("--grid", type=Path, required=True, help="YAML: profile, parameters (every run), grid (lists of values)"),
        arg("--scheduler", default=None, metavar="ADDRESS",
            help="a Dask scheduler (tls://HOST:8786) whose workers are benchmark hosts"), *cluster_args(),
        runs_dir("where finished run directories land (default: data/runs)"),
        arg("--sweeps-dir", type=Path, default=paths.DATA_DIR / "sweeps",
            help="where the sweep's records and index page go (default: data/sweeps)")], sweep),
    Command("scheduler", "start a Dask scheduler for sweeps, open only to members with the cluster's certificate "
                         "(made once under data/tls); a failed run is never retried on another worker", [
        arg("--port", type=int, default=8786),
        arg("--host", default="", help="the address to listen on (default: every interface; with --insecure 127.0.0.1)"),
        arg("--dashboard", default=None, metavar="HOST:PORT",
            help="where Dask's dashboard listens, when bokeh is installed (default: 127.0.0.1:8787; it has no "
                 "authentication)"), *cluster_args()], scheduler),
    Command("worker", "make this machine a benchmark host of a sweep's scheduler: one run at a time "
                      "(resource bench=1)", [
        arg("scheduler", help="tls://HOST:8786 (what `dbstudies scheduler` printed)"), *cluster_args(),
        arg("--name", default=None, help="the worker's name, unique in the cluster (default: this host's name)"),
        arg("--local-directory", type=Path, default=paths.DATA_DIR / "worker",
            help="the worker's own directory; its runs stay under runs/ there")], worker),
]
