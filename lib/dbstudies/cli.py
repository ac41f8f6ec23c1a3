"""`dbstudies run <study> …`: validate parameters, execute the study's notebook through
papermill into a new run directory, render its report.

    dbstudies run thread_pool --profile smoke -p threads '[1,8,64]' -p duration 5
    dbstudies plan thread_pool --profile quick
    dbstudies list
    dbstudies runs [thread_pool]
    dbstudies clean
    dbstudies export data/runs/thread_pool/<run-id> --format csv
    dbstudies compare data/runs/thread_pool/<run-a> data/runs/thread_pool/<run-b>
    dbstudies pack data/runs/thread_pool/<run-id>          # one file to share
    dbstudies replicate data/packs/thread_pool-<run-id>.run.tar.gz
    dbstudies pool data/runs/thread_pool/<run-a> data/runs/thread_pool/<run-b>
    dbstudies servers [provision mysql-9.7]
    dbstudies servers add mine ~/build/mariadb [--runtime mariadb-11.8]
    dbstudies report data/runs/thread_pool/<run-id>
    dbstudies sweep thread_pool --grid grid.yaml [--scheduler tls://HOST:8786]
    dbstudies scheduler                # on one machine: the Dask scheduler of a sweep (mutual TLS)
    dbstudies worker tls://HOST:8786   # on each benchmark host (data/tls/ copied from the scheduler's)
"""
from __future__ import annotations

import argparse
import faulthandler
import os
import signal
import sys
from pathlib import Path
from typing import Any, Sequence

from . import comparisons, contract, paths, study
from .errors import DbStudiesError
from .params import PROFILES, fields, meanings, profile_values

EXIT_USAGE = 2


def _arg(*flags: str, **kw: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    return flags, kw


def _study() -> tuple[tuple[str, ...], dict[str, Any]]:
    return _arg("study", help=f"one of: {', '.join(study.names())}")


def _runs_dir(help: str = "where run directories are (default: data/runs)") -> tuple[tuple[str, ...], dict[str, Any]]:
    return _arg("--runs-dir", type=Path, default=paths.RUNS_DIR, help=help)


def _parameter(help: str = "as for `run`") -> tuple[tuple[str, ...], dict[str, Any]]:
    return _arg("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"), help=help)


def _cluster_args() -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """How a scheduler, worker or client of a sweep's cluster proves it belongs (`cluster`)."""
    return [_arg("--tls-dir", type=Path, default=None, metavar="DIR",
                 help="the cluster's certificates (default: data/tls; `dbstudies scheduler` makes them)"),
            _arg("--insecure", action="store_true",
                 help="plain tcp:// without encryption or authentication: the loopback only (tests, one machine)")]


def _series_args() -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """What `history` and `bisect` share: the series' name, its builds in order, profile, parameters."""
    return [_arg("--name", default="series", help="the series' folder under data/series (default: series)"),
            _arg("--builds", nargs="+", default=None, metavar="BUILD",
                 help="the builds in order (flavours: names or .toml files; `servers add` makes a build directory one)"),
            _arg("--from-dir", type=Path, default=None, metavar="DIR",
                 help="a folder of build prefixes (release tarballs, install prefixes, build trees), one a subfolder: "
                      "each made a flavour under data/series/NAME/builds/ (instead of --builds)"),
            _arg("--order", default=None, metavar="FILE|version|name",
                 help="a file naming the builds (or --from-dir's subfolders) in order, one a line; with --from-dir "
                      "also `version` (the version each binary prints, then name; the default) or `name`"),
            _arg("--profile", default="quick", choices=("smoke", "quick", "full", "count"),
                 help="smoke (seconds), quick (48 pairs, then to a QPS MDE of 4 %%: 6–15 min a build), full (two cells, "
                      "3 %%, ≤ 1 h a build), count (instructions per transaction under valgrind, 1 client thread: "
                      "±0.05 %%, ≈ 1 min a build)"),
            _parameter("a versions-study parameter for every run of the series, e.g. -p threads '[64]'")]


KERNEL = [_arg("--kernel", default=None, help="Jupyter kernel (default: dbstudies, else python3)"),
          _arg("-v", "--verbose", action="store_true",
               help="show the notebook's output as it runs (default: a progress bar)")]


# every command: its help and its arguments, in the order `dbstudies -h` lists them
COMMANDS: dict[str, tuple[str, list[tuple[tuple[str, ...], dict[str, Any]]]]] = {
    "run": ("run a study end to end and render its report", [
        _study(), _arg("--profile", default="quick",
                       help="smoke (seconds), quick (minutes, default), full (hours); a study may have "
                            "more (the scaling faces: count, by the server's instructions)"),
        _parameter("override a parameter, e.g. -p threads '[1,8,64]'"),
        _runs_dir("where run directories are created (default: data/runs)"), *KERNEL]),
    "plan": ("before running: the expected wall time and the minimum detectable effect of each table, "
             "from this host's earlier runs (or a pilot)", [
        _study(), _arg("--profile", default="quick"), _parameter(),
        _runs_dir("where earlier runs are, and where a pilot run goes (default: data/runs)"),
        _arg("--no-pilot", action="store_true",
             help="never measure: without earlier runs, say so instead of running a pilot")]),
    "list": ("list studies and their parameters: values per profile, meanings", [
        _arg("study", nargs="?", help="one study (a name or a study's folder); default: every built-in"),
        _arg("--write-readme", action="store_true",
             help="write the built-in studies' parameter tables into their README.md, their notebooks' "
                  "parameters cells, and what `make study` prints into README.md")]),
    "report": ("(re)render a run's report.html; a run without an executed notebook (measured from "
               "JupyterLab) gets one first", [
        _arg("run_dir", type=Path),
        _arg("--analyse", action="store_true",
             help="execute the notebook on the run's steps again, even if it has one"),
        _parameter("re-analyse at another analysis parameter (e.g. -p draw_threshold 0.02): a variant of "
                   "its own in the run, its report beside the run's"), *KERNEL]),
    "runs": ("list runs: status, size, duration, parameters changed from the profile (marks runs whose "
             "owner is gone abandoned)", [
        _arg("study", nargs="?", help="only this study's runs (or a packed run: its line)"), _runs_dir()]),
    "clean": ("remove what abandoned, failed or interrupted runs left behind (server datadirs, socket "
              "directories)", [
        _arg("--unpacked", action="store_true",
             help="also the copies of packed runs opened here (data/unpacked; each is unpacked again when "
                  "next opened), but not one a replication is measuring from"), _runs_dir()]),
    "servers": ("list server flavours (version, source, provisioned, disk use); `servers provision NAME` "
                "builds a rootfs flavour's tree; `servers add NAME PATH` makes a flavour of a server "
                "directory", [
        _arg("action", nargs="?", choices=("list", "provision", "add"), default="list"),
        _arg("name", nargs="?", help="the flavour to provision or add"),
        _arg("path", nargs="?", type=Path,
             help="add: an unpacked release tarball, an install prefix or a build tree"),
        _arg("--runtime", default="", help="add: a rootfs flavour whose tree supplies the libraries the "
                                           "binary needs (e.g. mysql-9.7)"),
        _arg("--servers-dir", type=Path, default=paths.SERVERS_DIR,
             help="add: where NAME.toml is written (default: env/servers)")]),
    "compare": ("run B against run A (same study): first their effects (each arm against the baseline "
                "inside each run: did A's answer hold in B?), then their values per configuration and "
                "cell (not interleaved: drift is confounded)", [
        _arg("run_a", type=Path, help="the baseline run (a directory or a packed run)"),
        _arg("run_b", type=Path),
        _arg("--metric", choices=[c.key for c in (*comparisons.SYSBENCH, *comparisons.COUNTED)], default=None,
             help="the comparison whose values are compared (default: run A's lead one — qps, or a count "
                  "run's instructions; the effects: every one)"),
        _arg("--csv", type=Path, default=None, help="also write the whole table here")]),
    "pack": ("write a run as one file to share (tables, metadata, notebook, report, its workload scripts, "
             "each server's my.cnf; no datadir) — or a series' folder (data/series/NAME) with all its runs", [
        _arg("run_dir", type=Path, help="a run directory, a packed run, or a series' folder"),
        _arg("--out", type=Path, default=None,
             help="the archive (default: data/packs/<study>-<run-id>.run.tar.gz, series-NAME.series.tar.gz)")]),
    "replicate": ("measure a run again here — its study, parameters, workload scripts and server flavours "
                  "— and say per cell whether its answer held", [
        _arg("run_dir", type=Path, help="a run directory or a packed run (`dbstudies pack`)"),
        _runs_dir("where the replication's run directory is created (default: data/runs)"),
        _arg("--kernel", default=None, help="as for `run`"),
        _arg("-v", "--verbose", action="store_true", help="as for `run`")]),
    "pool": ("several runs of a study as one estimate per cell (random effects), with the spread between "
             "runs (τ, I²)", [
        _arg("runs", type=Path, nargs="+", help="run directories or packed runs (at least two)"),
        _arg("--csv", type=Path, default=None, help="also write the pooled tables here")]),
    "history": ("measure an ordered series of server builds, each against one reference build (paired, to "
                "a precision target), find the change points and write the series' report "
                "(data/series/NAME/report.html); builds measured once are not measured again", [
        *_series_args(),
        _arg("--reference", required=True, help="the build every build is measured against (a flavour, or with --from-dir one of its subfolders)"),
        _arg("--scheduler", default=None, metavar="ADDRESS",
             help="measure the builds as one Dask sweep on the benchmark hosts of this scheduler (`dbstudies worker`; "
                  "the builds' flavour files and directories at the same paths there)"), *_cluster_args()]),
    "bisect": ("find where between a good and a bad build the numbers changed: measure the midpoint "
               "against both ends until the precision says which side it is on, then go on in that half", [
        *_series_args(),
        _arg("--good", required=True, help="the build before the change (in the order)"),
        _arg("--bad", required=True, help="the build after it")]),
    "sweep": ("run a study over a grid of parameter sets (YAML), here one after another or on Dask "
              "workers (--scheduler)", [
        _study(),
        _arg("--grid", type=Path, required=True,
             help="YAML: profile, parameters (every run), grid (lists of values)"),
        _arg("--scheduler", default=None, metavar="ADDRESS",
             help="a Dask scheduler (tls://HOST:8786) whose workers are benchmark hosts"), *_cluster_args(),
        _runs_dir("where finished run directories land (default: data/runs)"),
        _arg("--sweeps-dir", type=Path, default=paths.DATA_DIR / "sweeps",
             help="where the sweep's records and index page go (default: data/sweeps)")]),
    "scheduler": ("start a Dask scheduler for sweeps, open only to members with the cluster's certificate "
                  "(made once under data/tls); a failed run is never retried on another worker", [
        _arg("--port", type=int, default=8786),
        _arg("--host", default="", help="the address to listen on (default: every interface; with --insecure 127.0.0.1)"),
        _arg("--dashboard", default=None, metavar="HOST:PORT",
             help="where Dask's dashboard listens, when bokeh is installed (default: 127.0.0.1:8787; it has no authentication)"),
        *_cluster_args()]),
    "worker": ("make this machine a benchmark host of a sweep's scheduler: one run at a time "
               "(resource bench=1)", [
        _arg("scheduler", help="tls://HOST:8786 (what `dbstudies scheduler` printed)"), *_cluster_args(),
        _arg("--name", default=None, help="the worker's name, unique in the cluster (default: this host's name)"),
        _arg("--local-directory", type=Path, default=paths.DATA_DIR / "worker",
             help="the worker's own directory; its runs stay under runs/ there")]),
    "lab": ("JupyterLab on notebooks/: what you save of a study notebook goes to a working copy under "
            "data/lab/, never into the tracked notebook", [
        _arg("--port", type=int, default=None)]),
    "export": ("write a run's tidy tables for other tools", [
        _arg("run_dir", type=Path),
        _arg("--format", choices=("csv", "parquet"), default="csv"),
        _arg("--out", type=Path, default=None,
             help="output folder (default: data/exports/<run-id>-<format>)")]),
}


def _parser() -> argparse.ArgumentParser:
    """The command line, built from `COMMANDS`."""
    ap = argparse.ArgumentParser(prog="dbstudies", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for name, (help, arguments) in COMMANDS.items():
        command = sub.add_parser(name, help=help)
        for flags, kw in arguments:
            command.add_argument(*flags, **kw)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # the command line: `kill -USR1 PID` prints where a stuck command is (every
        faulthandler.register(signal.SIGUSR1, all_threads=True)  # thread), and in its kernels
        os.environ["DBSTUDIES_STACKS_ON_USR1"] = "1"  # too (dbstudies/__init__.py)
    args = _parser().parse_args(argv)
    try:
        return _dispatch(args)
    except DbStudiesError as e:  # a problem we diagnosed: its message, no traceback
        print(f"dbstudies: {e}", file=sys.stderr)
        return EXIT_USAGE


def _dispatch(args: argparse.Namespace) -> int:
    return HANDLERS[args.command](args)


def _run(args: argparse.Namespace) -> int:
    from . import runner
    return runner.execute(args.study, args.profile, args.parameter, args.runs_dir, args.kernel,
                          args.verbose)


def _report(args: argparse.Namespace) -> int:
    from . import archive, runner
    from .render import render
    run = runner.variant_of(archive.open_run(args.run_dir), args.parameter)
    if args.analyse or not run.notebook.exists():
        print(f"dbstudies: executing the {run.metadata.get('study', 'study')} notebook on the run's "
              f"{run.status} steps", file=sys.stderr, flush=True)
        runner.analyse(run, args.kernel, args.verbose)
    print(render(run))
    return 0


def _export(args: argparse.Namespace) -> int:
    from . import archive, results
    run = archive.open_run(args.run_dir)
    out = args.out or paths.DATA_DIR / "exports" / f"{run.path.name}-{args.format}"
    for f in results.export_tables(run, out, args.format):
        print(f)
    return 0


def _history(args: argparse.Namespace) -> int:
    from . import bisection, cluster, history, series
    from .runner import parameters
    given = {"builds": args.builds, "order": args.order, "folder": args.from_dir}
    if args.command == "bisect":  # its report is the series' (with the history's effects when it has them)
        code = bisection.main(args.name, args.profile, parameters(args.parameter), args.good, args.bad, **given)
        print(f"report: {history.rewrite(series.SERIES_DIR / args.name)}")
        return code
    return history.main(args.name, args.reference, args.profile, parameters(args.parameter), **given,
                        scheduler=cluster.access(args.scheduler, tls_dir=args.tls_dir, insecure=args.insecure))


def _sharing(args: argparse.Namespace) -> int:
    from . import sharing
    if args.command == "pack":
        return sharing.pack(args.run_dir, args.out)
    if args.command == "pool":
        return sharing.pool(args.runs, args.csv)
    return sharing.replicate(args.run_dir, args.runs_dir, args.kernel, args.verbose)


def _lab(args: argparse.Namespace) -> int:
    from . import lab
    return lab.main(args.port)


def _plan(args: argparse.Namespace) -> int:
    from . import planner
    from .runner import parameters
    overrides = parameters(args.parameter)
    for line in planner.plan(args.study, args.profile, overrides, args.runs_dir,
                             allow_pilot=not args.no_pilot,
                             say=lambda m: print(f"dbstudies: {m}", file=sys.stderr, flush=True)):
        print(line)
    return 0


def _runs(which: str | None, runs_dir: Path) -> int:
    """One line per run (of the study `which`, a name or a study's folder), oldest first."""
    from . import archive, ownership, results
    packed = which is not None and archive.is_archive(which)
    # an unknown study is an error, not an empty list
    study_name = None if which is None or packed else contract.study_name(study.load(which))
    print(f"{'run':<26} {'study':<12} {'status':<11} {'size':>9} {'duration':>9}  changed from the profile")
    for run in [archive.open_run(which)] if packed else results.list_runs(study_name, runs_dir):
        meta, status = run.metadata, ownership.check_abandoned(run)
        print(f"{run.path.name:<26} {meta['study']:<12} {status:<11} "
              f"{paths.disk_usage(run.path) / 2**20:>7.1f}Mi {_duration(meta):>9}  {_changed(meta)}")
        for name, changed in run.variants():  # its re-analyses at other analysis parameters
            print(_variant_line(run, name, changed))
    return 0


def _variant_line(run: Any, name: str, changed: dict) -> str:
    """A re-analysis variant as `runs` lists it: what it changed, its report — or, where it
    has none (a notebook's re-analysis writes none), the command that writes it."""
    from . import results
    from .ownership import report_command
    what = ", ".join(f"{k} {c.get('variant')} (run: {c.get('run')})" for k, c in changed.items())
    if (run.path / results.VARIANTS / name / "report.html").exists():
        return f"  └ re-analysis {name}: {what}; {results.VARIANTS}/{name}/report.html"
    again = "".join(f" -p {k} {c.get('variant')}" for k, c in changed.items())  # the run by its path: a bare id is no run
    return f"  └ re-analysis {name}: {what}; no report yet (`{report_command(run)}{again}` writes one)"


def _duration(meta: dict) -> str:
    import datetime as dt
    start = dt.datetime.fromisoformat(meta["created_at"])
    end = dt.datetime.fromisoformat(meta["finished_at"]) if meta.get("finished_at") \
        else dt.datetime.now(dt.timezone.utc)
    minutes, seconds = divmod(int((end - start).total_seconds()), 60)
    return f"{minutes}m{seconds:02d}s"


def _changed(meta: dict) -> str:
    """`name=value` for each parameter that differs from its profile's value."""
    rows = study.against_profile(meta)
    if rows is None:
        return "?"
    changed = [f"{k}={v}" for k, v, default in rows if v != default]
    return f"{meta['parameters']['profile']}: " + (", ".join(changed) or "none")


def _clean(runs_dir: Path, unpacked: bool = False) -> int:
    from . import archive, ownership, results
    freed, measuring = 0, set()
    for run in results.list_runs(None, runs_dir):
        if ownership.check_abandoned(run) == "running":
            measuring.add(str(study.params_of(run).replicate))
        for path, size in ownership.clean(run):
            print(f"removed {path} ({size / 2**20:.1f} MiB) of {run.status} run {run.path.name}")
            freed += size
    for path, size in archive.clear_copies(keep=measuring) if unpacked else []:
        print(f"removed {path} ({size / 2**20:.1f} MiB), an unpacked copy of a packed run (unpacked again when opened)")
        freed += size
    print(f"dbstudies: freed {freed / 2**20:.1f} MiB")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from . import sharing
    return sharing.compare(args.run_a, args.run_b, args.metric, args.csv)


def _servers(args: argparse.Namespace) -> int:
    from .errors import ConfigError, ParamError
    action, name = args.action, args.name
    if action == "add":
        if not (name and args.path):
            raise ConfigError("servers add: name the flavour and its directory (NAME PATH)")
        return _add_server(name, args)
    if args.path or args.runtime:
        raise ParamError([f"servers {action}: PATH and --runtime go with `servers add`"])
    if action == "provision":
        if not name:
            raise ParamError(["servers provision: name a flavour"])
        return _provision(name)
    return _list_servers()


def _say(m: str) -> None:
    print(f"dbstudies: {m}", flush=True)


def _add_server(name: str, args: argparse.Namespace) -> int:
    from . import servers
    # a problem is one line (a ConfigError), before anything is written
    out, flavour = servers.add_dir(name, args.path, args.runtime, servers_dir=args.servers_dir, say=_say)
    print(f"{flavour.name}: {flavour.family} {flavour.dialect.release} ({flavour.layout}"
          f"{', runtime ' + flavour.runtime if flavour.runtime else ''}; thread pool: "
          f"{'yes' if flavour.thread_pool else 'no'})\n  --version: {flavour.version_text}\n"
          f"  written: {out}")
    return 0


def _provision(name: str) -> int:
    from . import servers
    from .errors import ConfigError, ParamError
    try:
        flavour = servers.load_flavour(name)
    except ConfigError as e:
        raise ParamError([str(e)]) from None
    servers.check_installed(flavour)
    flavour.provision(say=_say)
    return 0


def _list_servers() -> int:
    from . import servers
    from .errors import ConfigError
    print(f"{'flavour':<15} {'source':<34} {'version':<28} {'disk':>9}")
    for name in servers.list_flavours():
        try:
            f = servers.load_flavour(name)
        except ConfigError as e:  # a directory flavour whose directory changed: say so, go on
            print(f"{name:<15} {'?':<34} {str(e)[:60]}")
            continue
        source = {"system": "host", "rootfs": f"Debian {f.suite} rootfs", "remote": f"remote {f.host}"}.get(
            f.source, f"{f.layout}" + (f" in {f.runtime}" if f.runtime else ""))
        size = servers.disk_use(f)
        version = f"{f.family} {f.dialect.release}" if f.source == "dir" else servers.package_version(f)
        print(f"{name:<15} {source:<34} {version or 'not provisioned':<28} "
              f"{(f'{size / 2**20:.0f}Mi' if size else '—'):>9}" + (f"  {f.path}" if f.source == "dir" else ""))
    return 0


def _sweep_commands(args: argparse.Namespace) -> int:
    import signal

    from . import cluster, sweep
    # Ctrl-C (SIGINT) ends each of these even when it was started with SIGINT ignored, as a
    # background job of a non-interactive shell is (bash does that): `kill -INT` must work
    # (a scheduler and a worker started so outlived SIGINT: the suite waited 2 × 30 s on them)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.command == "scheduler":
        return cluster.serve(args.port, args.host, args.dashboard, tls_dir=args.tls_dir, insecure=args.insecure)
    way = cluster.access(args.scheduler, tls_dir=args.tls_dir, insecure=args.insecure)
    if args.command == "worker":
        return cluster.join(way, args.local_directory, args.name)
    jobs = sweep.expand(args.study, sweep.load_grid(args.grid))
    s = sweep.Sweep(contract.study_name(study.load(args.study)), jobs, args.runs_dir, args.sweeps_dir,
                    say=lambda m: print(f"dbstudies: {m}", flush=True))
    code = 0
    try:
        s.run_on(way) if way else s.run_here()
    except KeyboardInterrupt:
        code = 130
    print(s.summary())
    print(f"dbstudies: index {s.index()}")
    return code or (0 if all(r["status"] == "complete" for r in s.records) else 1)


def _list(which: str | None, write_readme: bool) -> int:
    """Studies and their parameters: each one's quick value, smoke and full where they
    differ, and what it means (the study READMEs' tables say the same; `--write-readme` writes them)."""
    if write_readme:
        from . import generated
        for line in generated.write_all():
            print(f"dbstudies: {line}")
        return 0
    for ref in [which] if which else study.names():
        s = study.load(ref)
        words = meanings(s.Params)
        print(f"{contract.study_name(s)}: {contract.title(s)}")
        every = {p: profile_values(s.Params, s.PROFILES, p) for p in PROFILES}
        for field in fields(s.Params):
            values = {p: every[p][field] for p in PROFILES}
            others = "".join(f", {p}: {v!r}" for p, v in values.items() if p != "quick" and v != values["quick"])
            print(f"  {field} (quick: {values['quick']!r}{others}) — {words.get(field, '')}")
    return 0


# what each command does (`COMMANDS` says what it takes)
HANDLERS = {
    "run": _run, "plan": _plan, "list": lambda a: _list(a.study, a.write_readme), "report": _report,
    "runs": lambda a: _runs(a.study, a.runs_dir), "clean": lambda a: _clean(a.runs_dir, a.unpacked),
    "servers": _servers, "compare": _compare,
    "history": _history, "bisect": _history, "pack": _sharing, "replicate": _sharing, "pool": _sharing, "sweep": _sweep_commands,
    "scheduler": _sweep_commands, "worker": _sweep_commands, "lab": _lab, "export": _export,
}


if __name__ == "__main__":
    sys.exit(main())
