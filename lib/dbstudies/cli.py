"""`dbstudies run <study> …`: validate parameters, execute the study's notebook through
papermill into a new run directory, render its report.

    dbstudies run thread_pool --profile smoke -p threads '[1,8,64]' -p duration 5
    dbstudies list
    dbstudies report data/runs/thread_pool/<run-id>
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from . import paths, proc
from .params import PROFILES, ParamError, as_dict, parse_value
from .results import Run
from .studies import STUDIES

EXIT_PARAMS, EXIT_FAILED, EXIT_INTERRUPTED = 2, 1, 130


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="dbstudies", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a study end to end and render its report")
    run.add_argument("study", help=f"one of: {', '.join(STUDIES)}")
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
    if args.command == "list":
        return _list()
    if args.command == "report":
        print(render_report(Run.open(args.run_dir)))
        return 0
    return run_study(args.study, args.profile, args.parameter, args.runs_dir, args.kernel)


def _list() -> int:
    for name, study in STUDIES.items():
        print(f"{name}: {study.__doc__.strip().splitlines()[0]}")
        for field, value in study.PROFILES["quick"].items():
            print(f"  {field} (quick: {value!r})")
    return 0


def run_study(name: str, profile: str, pairs: Sequence[Sequence[str]], runs_dir: Path,
              kernel: str | None = None) -> int:
    if name not in STUDIES:
        print(f"dbstudies: unknown study {name!r}; known: {', '.join(STUDIES)}", file=sys.stderr)
        return EXIT_PARAMS
    study = STUDIES[name]
    names = [n for n, _ in pairs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    try:
        if dupes:
            raise ParamError([f"{n}: given more than once" for n in dupes])
        params = study.resolve(profile, **{n: parse_value(v) for n, v in pairs})
    except ParamError as e:
        print(f"dbstudies: {e}", file=sys.stderr)
        return EXIT_PARAMS
    run = Run.create(study.STUDY, as_dict(params), root=runs_dir)
    print(f"dbstudies: run directory {run.path}", flush=True)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with SIGINT ignored
    nb_params = {**as_dict(params), "run_dir": str(run.path)}
    try:
        code = _execute(study.STUDY, run, nb_params, kernel)
    except KeyboardInterrupt:
        _mark(run, "interrupted", "interrupted by the user (SIGINT/SIGTERM)")
        _reap_servers(run)
        print(f"dbstudies: interrupted; what was measured is in {run.path}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # the kernel died, papermill could not start it, …
        _mark(run, "failed", f"{type(e).__name__}: {e}")
        _reap_servers(run)
        print(f"dbstudies: the study could not be executed: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAILED
    _reap_servers(run)
    if (run.path / "notebook.ipynb").exists():
        print(f"dbstudies: report {render_report(run)}")
    print(f"dbstudies: run {run.status}: {run.path}")
    return code


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _execute(study: str, run: Run, nb_params: dict[str, Any], kernel: str | None) -> int:
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("papermill").addFilter(lambda r: not r.getMessage().startswith(("Executing", "Ending Cell")))
    try:
        pm.execute_notebook(paths.NOTEBOOKS_DIR / f"{study}.ipynb", run.path / "notebook.ipynb",
                            parameters=nb_params, kernel_name=kernel or default_kernel(),
                            cwd=str(paths.NOTEBOOKS_DIR), log_output=True, progress_bar=False)
    except PapermillExecutionError as e:
        _mark(run, "failed", f"{e.ename}: {e.evalue}")
        print(f"dbstudies: the study failed: {e.ename}: {e.evalue}", file=sys.stderr)
        return EXIT_FAILED
    if run.status == "running":  # the notebook must finish the run itself
        _mark(run, "failed", "the notebook ended without marking the run complete")
        return EXIT_FAILED
    return 0 if run.status == "complete" else EXIT_FAILED


def _mark(run: Run, status: str, error: str) -> None:
    """Record how the run ended, unless the notebook already did."""
    if run.status == "running":
        run.finish(status, error)


def _reap_servers(run: Run, timeout: float = 30) -> None:
    """Make sure no server of this run survives: SIGTERM, then SIGKILL on a deadline."""
    marker = str(run.path / "server")
    pids = proc.find_processes(marker)
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if Path(f"/proc/{p}").exists()]
        time.sleep(0.1)
    for pid in pids:
        _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def default_kernel() -> str:
    from jupyter_client.kernelspec import find_kernel_specs
    return "dbstudies" if "dbstudies" in find_kernel_specs() else "python3"


def render_report(run: Run) -> Path:
    """report.html from the executed notebook: code and stderr (progress bars) hidden."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(run.path / "notebook.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.get("outputs", [])
                            if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
    exporter = HTMLExporter(exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nb)
    out = run.path / "report.html"
    out.write_text(body)
    return out


if __name__ == "__main__":
    sys.exit(main())
