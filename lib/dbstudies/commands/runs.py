"""Commands on runs once measured: list them (and their re-analyses), clean what failed runs
left, export their tables, compare two, pack one to share, replicate one here, pool several."""
from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Any

from ..core import comparisons, paths
from ..kit import contract, study
from ..store import params as P
from .kit import Command, arg, runs_dir


def runs(args: argparse.Namespace) -> int:
    """One line per run (of the study `args.study`, a name or a study's folder), oldest first."""
    from ..measure import ownership
    from ..store import archive, results
    which = args.study
    packed = which is not None and archive.is_archive(which)
    # an unknown study is an error, not an empty list
    study_name = None if which is None or packed else contract.study_name(study.load(which))
    print(f"{'run':<26} {'study':<12} {'status':<11} {'size':>9} {'duration':>9}  changed from the profile")
    for run in [archive.open_run(which)] if packed else results.list_runs(study_name, args.runs_dir):
        status, r = ownership.check_abandoned(run), run.record
        print(f"{run.path.name:<26} {r.study:<12} {status:<11} "
              f"{paths.disk_usage(run.path) / 2**20:>7.1f}Mi {duration(r):>9}  {changed_line(r.raw)}")
        for name, changed in run.variants():  # its re-analyses at other analysis parameters
            print(variant_line(run, name, changed))
    return 0


def variant_line(run: Any, name: str, changed: dict) -> str:
    """A re-analysis variant as `runs` lists it: what it changed, its report — or, where it
    has none (a notebook's re-analysis writes none), the command that writes it."""
    from ..measure.ownership import report_command
    from ..store import results
    what = ", ".join(f"{k} {c.get('variant')} (run: {c.get('run')})" for k, c in changed.items())
    if (run.path / results.VARIANTS / name / "report.html").exists():
        return f"  └ re-analysis {name}: {what}; {results.VARIANTS}/{name}/report.html"
    again = "".join(f" -p {k} {c.get('variant')}" for k, c in changed.items())  # the run by its path: a bare id is no run
    return f"  └ re-analysis {name}: {what}; no report yet (`{report_command(run)}{again}` writes one)"


def duration(r: Any) -> str:
    """How long a run (its `record.Record`) took, or has taken so far."""
    start, end = r.started, r.ended or dt.datetime.now(dt.timezone.utc)
    if start is None:
        return "?"
    minutes, seconds = divmod(int((end - start).total_seconds()), 60)
    return f"{minutes}m{seconds:02d}s"


def changed_line(meta: dict) -> str:
    """`name=value` for each parameter that differs from its profile's value."""
    rows = study.against_profile(meta)
    if rows is None:
        return "?"
    changed = [f"{k}={v}" for k, v, default in rows if v != default]
    return f"{P.written(meta).get('profile')}: " + (", ".join(changed) or "none")


def clean(args: argparse.Namespace) -> int:
    from ..measure import ownership
    from ..store import archive, results
    freed, measuring = 0, set()
    for run in results.list_runs(None, args.runs_dir):
        if ownership.check_abandoned(run) == "running":
            measuring.add(str(study.params_of(run).replicate))
        for path, size in ownership.clean(run):
            print(f"removed {path} ({size / 2**20:.1f} MiB) of {run.status} run {run.path.name}")
            freed += size
    for path, size in archive.clear_copies(keep=measuring) if args.unpacked else []:
        print(f"removed {path} ({size / 2**20:.1f} MiB), an unpacked copy of a packed run (unpacked again when opened)")
        freed += size
    print(f"dbstudies: freed {freed / 2**20:.1f} MiB")
    return 0


def export(args: argparse.Namespace) -> int:
    from ..store import archive, exports
    run = archive.open_run(args.run_dir)
    out = args.out or paths.DATA_DIR / "exports" / f"{run.path.name}-{args.format}"
    for f in exports.export_tables(run, out, args.format):
        print(f)
    return 0


def compare(args: argparse.Namespace) -> int:
    from ..workflows import sharing
    return sharing.compare(args.run_a, args.run_b, args.metric, args.csv)


def pack(args: argparse.Namespace) -> int:
    from ..workflows import sharing
    return sharing.pack(args.run_dir, args.out)


def replicate(args: argparse.Namespace) -> int:
    from ..workflows import sharing
    return sharing.replicate(args.run_dir, args.runs_dir, args.kernel, args.verbose)


def pool(args: argparse.Namespace) -> int:
    from ..workflows import sharing
    return sharing.pool(args.runs, args.csv)


COMMANDS = [
    Command("runs", "list runs: status, size, duration, parameters changed from the profile (marks runs whose "
                    "owner is gone abandoned)", [
        arg("study", nargs="?", help="only this study's runs (or a packed run: its line)"), runs_dir()], runs),
    Command("clean", "remove what abandoned, failed or interrupted runs left behind (server datadirs, socket "
                     "directories)", [
        arg("--unpacked", action="store_true",
            help="also the copies of packed runs opened here (data/unpacked; each is unpacked again when "
                 "next opened), but not one a replication is measuring from"), runs_dir()], clean),
    Command("compare", "run B against run A (same study): first their effects (each arm against the baseline "
                       "inside each run: did A's answer hold in B?), then their values per configuration and "
                       "cell (not interleaved: drift is confounded)", [
        arg("run_a", type=Path, help="the baseline run (a directory or a packed run)"),
        arg("run_b", type=Path),
        arg("--metric", choices=[c.key for c in (*comparisons.SYSBENCH, *comparisons.COUNTED)], default=None,
            help="the comparison whose values are compared (default: run A's lead one — qps, or a count "
                 "run's instructions; the effects: every one)"),
        arg("--csv", type=Path, default=None, help="also write the whole table here")], compare),
    Command("pack", "write a run as one file to share (tables, metadata, notebook, report, its workload scripts, "
                    "each server's my.cnf; no datadir) — or a series' folder (data/series/NAME) with all its runs", [
        arg("run_dir", type=Path, help="a run directory, a packed run, or a series' folder"),
        arg("--out", type=Path, default=None,
            help="the archive (default: data/packs/<study>-<run-id>.run.tar.gz, series-NAME.series.tar.gz)")], pack),
    Command("replicate", "measure a run again here — its study, parameters, workload scripts and server flavours "
                         "— and say per cell whether its answer held", [
        arg("run_dir", type=Path, help="a run directory or a packed run (`dbstudies pack`)"),
        runs_dir("where the replication's run directory is created (default: data/runs)"),
        arg("--kernel", default=None, help="as for `run`"),
        arg("-v", "--verbose", action="store_true", help="as for `run`")], replicate),
    Command("pool", "several runs of a study as one estimate per cell (random effects), with the spread between "
                    "runs (τ, I²)", [
        arg("runs", type=Path, nargs="+", help="run directories or packed runs (at least two)"),
        arg("--csv", type=Path, default=None, help="also write the pooled tables here")], pool),
    Command("export", "write a run's tidy tables for other tools", [
        arg("run_dir", type=Path),
        arg("--format", choices=("csv", "parquet"), default="csv"),
        arg("--out", type=Path, default=None, help="output folder (default: data/exports/<run-id>-<format>)")], export),
]
