"""`dbstudies run` and `dbstudies report`: a study's notebook executed through papermill.

`execute` creates the run (owned by this process, `ownership`), executes the study's
notebook in a kernel, and sets the final status from what happened: complete, failed (with
the error) or interrupted (SIGINT or SIGTERM). It also reaps any server the kernel left
behind and renders the report; `analyse` re-executes a notebook on an ended run.
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import gc
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any, Iterator, Sequence, TextIO

from .. import workloads
from ..core import paths
from ..core.errors import ParamError, StoreError, disk_full
from ..kernel import live
from ..kit.contract import Study, study_name
from ..kit.study import load, notebook_face, notebook_of, reference
from ..measure import checks, schedule
from ..measure.ownership import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    check_abandoned,
    create_run,
    reap_servers,
    record_end,
    report_command,
)
from ..report.render import printed, render, terminal_text
from ..store.params import as_dict, written
from ..store.results import Run

# ---------------------------------------------------------------- dbstudies run

FULL_DISK = "the disk under {} is full (No space left on device)"  # the record names no machine path


class _Interrupted(KeyboardInterrupt):
    def __init__(self, signame: str):
        super().__init__(signame)
        self.signame = signame


def _on_signal(signum: int, frame: Any) -> None:
    raise _Interrupted(signal.Signals(signum).name)


def parameters(pairs: Sequence[Sequence[str]]) -> dict[str, str]:
    """The CLI's `-p NAME VALUE` pairs as overrides; a name given twice is an error."""
    names = [n for n, _ in pairs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ParamError([f"{n}: given more than once" for n in dupes])
    return dict(pairs)


def _resolved(name: str, profile: str, overrides: dict[str, Any]) -> tuple[Study, Path, Any]:
    """The study `name`, its notebook and its parameters checked whole (a DbStudiesError
    before anything starts)."""
    study = load(name)
    notebook = notebook_of(study)
    if not notebook.is_file():
        raise StoreError(f"{name}: the study has no notebook {notebook}")
    p = checks.resolve(study, profile, **overrides)  # raw text: each is parsed for its type
    if any(workloads.is_script(w) for w in getattr(p, "workloads", [])):
        # a script named relative to this shell's folder: the notebook's kernel runs in the
        # notebook's folder and finds it only where the name means the same file from there
        p = dataclasses.replace(p, workloads=[_from_here(w, notebook.parent) for w in p.workloads])
    return study, notebook, p


def _created(study: Any, p: Any, runs_dir: Path) -> Run:
    """The run's directory (a clear error where it cannot be made), said with how long the
    run should take."""
    try:
        run = create_run(study, p, runs_dir, "cli")
    except OSError as e:
        raise StoreError(f"cannot create a run directory under {runs_dir}: "
                         f"{e.strerror or e}") from None
    minutes = schedule.estimated_seconds(study, p) / 60
    print(f"dbstudies: {study_name(study)} ({p.profile}), about {minutes:.0f} min; run directory {run.path}",
          flush=True)
    return run


def execute(name: str, profile: str, pairs: Sequence[Sequence[str]], runs_dir: Path,
            kernel: str | None = None, verbose: bool = False) -> int:
    """`dbstudies run`: validate, create the run, execute the notebook (a progress bar in
    the terminal; the notebook's own output with `verbose`), record how it ended, write the report, print
    the conclusion. A run that fails or is interrupted still gets a report: the notebook is
    executed again on it, analysing the steps that finished.
    Bad parameters or runs directory raise a DbStudiesError before anything starts."""
    study, notebook, p = _resolved(name, profile, parameters(pairs))
    run = _created(study, p, runs_dir)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)  # even if started with SIGINT ignored
    code = 0
    try:
        _notebook(run, notebook, run.notebook,
                  {**notebook_face(study), **as_dict(p), "run_dir": str(run.path)}, kernel, verbose, progress=True)
        record_end(run, "complete")
    except KeyboardInterrupt as e:
        signame = getattr(e, "signame", "SIGINT")
        record_end(run, "interrupted", f"interrupted by {signame}")
        print(f"dbstudies: interrupted ({signame})", file=sys.stderr, flush=True)
        code = EXIT_INTERRUPTED
    except Exception as e:  # noqa: BLE001 - a cell raised, the kernel died, …
        said = _error_line(e)
        if disk_full(said):  # one line here (where), the whole error in the run's record (no machine path)
            record_end(run, "failed", FULL_DISK.format("the run's directory") + "\n" + said)
            said = FULL_DISK.format(run.path.parent)
        else:
            record_end(run, "failed", said)
        print(f"dbstudies: the study failed: {said}", file=sys.stderr, flush=True)
        code = EXIT_FAILED
    finally:
        reap_servers(run)
    return _conclude(run, kernel, verbose) or code


def _from_here(workload: str, cwd: Path) -> str:
    """A script workload as the notebook (its kernel running in `cwd`) must name it: as
    given where it means the same file from there (`workloads.script_path` also looks in the
    repository), else its absolute path."""
    if not workloads.is_script(workload):
        return workload
    here = workloads.script_path(workload)
    there = next(((base / workload).resolve() for base in (cwd, paths.REPO)
                  if (base / workload).is_file()), None)
    return workload if there == here else str(here)


def _error_line(e: BaseException) -> str:
    from papermill.exceptions import PapermillExecutionError
    if isinstance(e, PapermillExecutionError):
        return f"{e.ename}: {e.evalue}"
    return f"{type(e).__name__}: {e}"


def _conclude(run: Run, kernel: str | None, verbose: bool) -> int:
    """Write the report (analysing an ended run's steps first when it did not complete),
    then print the conclusion, the report's path and the status. Returns 0, or the exit
    code of an interruption while analysing."""
    try:
        if run.status != "complete":
            print(f"dbstudies: analysing the steps that finished (Ctrl-C skips; `{report_command(run)}` "
                  "does it later)", file=sys.stderr, flush=True)
            analyse(run, kernel, verbose)
        report = render(run)
    except KeyboardInterrupt:
        print(f"dbstudies: report skipped; run {run.status}: {run.path}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        print(f"dbstudies: report not written, the disk is full; with room again: {report_command(run)}\n"
              f"dbstudies: run {run.status}: {run.path}", file=sys.stderr)
        return 0
    parts = printed(run.notebook)
    if parts:
        print("\n" + terminal_text(parts) + "\n")
    print(f"dbstudies: report {report}")
    print(f"dbstudies: run {run.status}: {run.path}")
    return 0


def variant_of(run: Run, pairs: Sequence[Sequence[str]]) -> Run:
    """`dbstudies report RUN -p NAME VALUE`: the run re-analysed at other analysis parameters
    (the study's `ANALYSIS`: the draw threshold, …) — a variant of its own inside the run,
    its report and figures beside the run's, never over them. Any other parameter is an
    error before anything executes: a re-analysis measures nothing."""
    overrides = parameters(pairs)
    if not overrides:
        return run
    study = load(reference(run.record))
    analysis = study.Params.ANALYSIS
    other = sorted(set(overrides) - analysis)
    if other:
        raise ParamError([f"{n}: a measurement parameter; a re-analysis keeps the run's (only "
                          f"{', '.join(sorted(analysis))} can change: `dbstudies run` measures anew)"
                          for n in other])
    recorded = run.params(study)
    p = checks.reanalysis(study, run, recorded.profile, overrides, say=lambda text: None)
    changed = p.analysis_changes(recorded)
    return run.as_variant(changed) if changed else run


def analyse(run: Run, kernel: str | None = None, verbose: bool = False) -> Path:
    """Execute the run's study notebook on this ended run — it measures nothing and analyses
    the steps the run holds — into the run's notebook.ipynb (a partial notebook from the
    failed or interrupted execution is kept as notebook-<status>.ipynb), or, for a variant
    (`variant_of`), into the variant's folder at its analysis parameters. A failing analysis
    cell is logged; what executed is kept, so the report can still be rendered."""
    from papermill.exceptions import PapermillExecutionError
    if check_abandoned(run) == "running":
        raise StoreError(f"run {run.path.name} is still running (pid "
                         f"{run.record.owner.get('pid')}); its report is written when it ends")
    r = run.record
    if not written(r.raw) or not r.study:
        raise StoreError(f"{run.path}/metadata.json names no study or parameters: nothing to analyse")
    study = load(reference(r))  # an unknown study: a clear error
    notebook = notebook_of(study)
    out, partial = run.notebook, run.partial_notebook(run.status)
    if not run.variant and out.exists() and not partial.exists() and run.status != "complete":
        out.rename(partial)  # the measuring execution's notebook, with its traceback
    try:
        # a variant's parameters are the run's with what it changed (`Run.params`)
        _notebook(run, notebook, out, {**notebook_face(study), **as_dict(run.params(study)),
                                       "run_dir": str(run.path)}, kernel, verbose)
    except PapermillExecutionError as e:
        print(f"dbstudies: the analysis stopped: {_error_line(e)}", file=sys.stderr)
    return out


KERNEL_LOG = "kernel.log"  # what the kernel and the libraries wrote to stderr (not with -v)


def _notebook(run: Run, notebook: Path, out: Path, nb_params: dict[str, Any], kernel: str | None,
              verbose: bool, progress: bool = False) -> None:
    """Execute the study's `notebook` with papermill (in its folder) into `out`. With `verbose` its cells'
    output is echoed; else the terminal shows only a progress bar (`progress`) and
    stderr goes to the run's kernel.log. Raises PapermillExecutionError when a cell raises."""
    import papermill as pm

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(message)s")
    logging.getLogger("papermill").addFilter(
        lambda r: not r.getMessage().startswith(("Executing", "Ending Cell")))
    quiet = contextlib.nullcontext(sys.stderr) if verbose else _stderr_to(run.output_dir / KERNEL_LOG)
    with quiet as terminal, _progress_bar(run, terminal, enabled=progress and not verbose):
        pm.execute_notebook(notebook, out, parameters=nb_params,
                            kernel_name=kernel or default_kernel(), cwd=str(notebook.parent),
                            log_output=verbose, progress_bar=False)


@contextlib.contextmanager
def _stderr_to(log: Path) -> Iterator[TextIO]:
    """Point file descriptor 2 — this process's and so the kernel's it starts — at `log`
    for the block; yield a stream to the terminal's stderr."""
    sys.stderr.flush()
    saved = os.dup(2)
    terminal = os.fdopen(os.dup(2), "w", buffering=1)
    with open(log, "a") as f:
        os.dup2(f.fileno(), 2)
    try:
        yield terminal
    finally:
        gc.collect()  # asyncio reports a dead kernel's tasks when they are collected
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        terminal.close()


class ProgressBar:
    """The terminal's bar of a run's progress (`Run.set_progress`): steps done of the total,
    whose fraction never falls (`live.Tally`: once the target loop's rounds grow the total, the
    count and what the loop says), the current step as its postfix."""

    def __init__(self, label: str, stream: TextIO, mininterval: float):
        self.label, self.stream, self.mininterval = label, stream, mininterval
        self.bar: Any = None
        self.tally = live.Tally()

    def show(self, now: dict[str, Any]) -> None:
        from tqdm import tqdm
        total = self.tally.shown(now["done"], now["total"])
        if self.bar is None:
            self.bar = tqdm(total=total, unit="step", desc=self.label, file=self.stream,
                            mininterval=self.mininterval, miniters=1)
        if total != self.bar.total:  # a follow-up phase adds steps; the target loop, rounds
            self.bar.total = total
        self.bar.set_postfix_str(now["now"], refresh=False)
        self.bar.update(now["done"] - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@contextlib.contextmanager
def _progress_bar(run: Run, stream: TextIO, enabled: bool) -> Iterator[None]:
    """Show the progress the measuring kernel writes to the run (Run.set_progress)."""
    if not enabled:
        yield
        return
    import threading
    stop = threading.Event()

    def follow() -> None:
        bar = ProgressBar(run.path.parent.name, stream, 1 if stream.isatty() else 30)
        while True:
            stopping = stop.wait(0.5)
            now = run.progress()
            if now:
                bar.show(now)
            if stopping:
                break
        bar.close()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)


def default_kernel() -> str:
    from jupyter_client.kernelspec import find_kernel_specs
    return "dbstudies" if "dbstudies" in find_kernel_specs() else "python3"
