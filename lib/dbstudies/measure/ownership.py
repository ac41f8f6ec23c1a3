"""Who owns a run, and how it ends: complete, failed, interrupted or abandoned.

A run is owned by the process that created it, recorded in its metadata (`owner`):

- `dbstudies run` (`runner.execute`) creates the run, executes the study's notebook through
  papermill in a kernel, and sets the final status from what happened.
- A notebook run from JupyterLab (or plain papermill) creates its own run (`open_run`): the
  kernel owns it; `guard` (around the measurement loop) marks it failed or interrupted when
  measuring raises, and the notebook's last cell (`finish`) marks it complete.

Only the owner writes the status, so a kernel that measures a CLI-owned run never does. A
run whose owner is gone is `abandoned`; `clean` stops its servers and removes its leftovers.
This module sits below the measurement loop (`experiment` guards its runs with it) and
above the store (`results`).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
from pathlib import Path
from typing import Any, Iterator

from ..core import paths, proc
from ..core.paths import disk_usage
from ..kernel import passes
from ..kit.contract import Study, study_name
from ..store.exports import export_figures
from ..store.params import as_dict
from ..store.results import Run, find_run

EXIT_FAILED, EXIT_INTERRUPTED = 1, 130  # bad input (a DbStudiesError) is the CLI's 2


# ---------------------------------------------------------------- ownership

def create_run(study: Study | str, p: Any, root: str | os.PathLike, kind: str) -> Run:
    """A new run directory of `study` (a study module, or a built-in's name) owned by this
    process (`kind`: cli or notebook); a study of your own is recorded with its folder
    (`study_dir`), to be loaded again."""
    name = study if isinstance(study, str) else study_name(study)
    run = Run.create(name, as_dict(p), root=Path(root))
    folder = None if isinstance(study, str) else paths.study_folder(study.module)
    run.update(owner={"kind": kind, "pid": os.getpid(), "host": socket.gethostname()},
               **({"study_dir": str(folder)} if folder else {}))
    return run


def open_run(study: Study, p: Any, run_dir: str | os.PathLike | None = None,
             root: str | os.PathLike | None = None) -> Run:
    """The run a notebook records into: the CLI's (`run_dir`: owned by the CLI), or a new
    one owned by this notebook (JupyterLab, plain papermill). A `run_dir` that has ended is
    re-analysed (`checks.reanalysis`): at the run's own analysis parameters the notebook
    writes no figure the run has (`Run.reread`); at others, into a variant of its own
    (`Run.as_variant`), so nothing the run wrote is overwritten. `run_dir` may be relative to the notebook's
    folder or to the repository (`results.find_run`)."""
    if run_dir:
        run = Run.open(find_run(run_dir))
        if run.status == "running":
            return run
        changed = p.analysis_changes(run.params(study))
        return run.as_variant(changed) if changed else run.reread()
    return create_run(study, p, root or paths.RUNS_DIR, "notebook")


def owns(run: Run) -> bool:
    owner = run.record.owner
    return owner.get("pid") == os.getpid() and owner.get("host") == socket.gethostname()


def record_end(run: Run, status: str, error: str | None = None) -> None:
    """Record how the run ended, once; a complete run's figures go to figures/<study>/."""
    if run.status != "running":
        return
    run.finish(status, error)
    if status == "complete" and run.figures.exists() \
            and run.path.is_relative_to(paths.RUNS_DIR):
        export_figures(run)


@contextlib.contextmanager
def guard(run: Run) -> Iterator[Run]:
    """Mark a run this process owns failed (with the error) or interrupted if the block
    raises; a run owned by someone else is left to its owner."""
    try:
        yield run
    except KeyboardInterrupt:
        if owns(run):
            record_end(run, "interrupted", "interrupted (KeyboardInterrupt)")
        raise
    except BaseException as e:
        if owns(run):
            record_end(run, "failed", f"{type(e).__name__}: {e}")
        raise


def finish(run: Run) -> None:
    """A notebook reached its end (its last cell): complete the run if the notebook owns it."""
    if owns(run) and run.status == "running":  # not a re-analysis, which only reads it
        record_end(run, "complete")
        passes.remember(run)
        print(f"Run complete: {run.path}\n`{report_command(run)}` writes its executed "
              "notebook and report.html there.\n" + reanalyse_line(run))


def reanalyse_line(run: Run) -> str:
    """How to analyse a run again without measuring it."""
    return (f'To re-analyse it (another draw threshold, …) without measuring: change only analysis parameters and '
            f'Run All again in this kernel, or set run_dir = "{run.path}" in any.')


def report_command(run: Run) -> str:
    """The shell command, from the repository, that writes a run's report: the venv's
    `dbstudies` (not on PATH unless the venv is activated), the run named from the repository."""
    exe = Path(sys.prefix) / "bin" / "dbstudies"
    cli = exe.relative_to(paths.REPO) if exe.is_relative_to(paths.REPO) else "dbstudies"
    where = run.path.relative_to(paths.REPO) if run.path.is_relative_to(paths.REPO) else run.path
    return f"{cli} report {where}"


# ---------------------------------------------------------------- abandoned runs, clean-up

def owner_alive(run: Run) -> bool | None:
    """Whether the process that owns the run still exists (None: unknown, e.g. another host)."""
    owner = run.record.owner
    if not owner.get("pid") or owner.get("host") != socket.gethostname():
        return None
    return proc.alive(owner["pid"])


def check_abandoned(run: Run) -> str:
    """The run's status, after marking a running run whose owner is gone `abandoned`."""
    if run.status == "running" and owner_alive(run) is False:
        run.finish("abandoned", f"its owner (pid {run.record.owner['pid']}) is gone; "
                                "`dbstudies clean` removes what it left behind")
    return run.status


def leftovers(run: Run) -> list[Path]:
    """What a run that did not end cleanly can leave behind: server datadirs in the run
    directory and the servers' private socket directories (/tmp/dbs-…)."""
    found = sorted(p for p in run.servers_dir.glob("*/datadir") if p.is_dir())
    for server in run.record.servers:
        sockdir = Path(server.raw.get("socket") or "/nonexistent").parent
        if sockdir.name.startswith("dbs-") and sockdir.is_dir() and sockdir not in found:
            found.append(sockdir)
    return found


def clean(run: Run) -> list[tuple[Path, int]]:
    """Stop any server of an abandoned, failed or interrupted run and remove its leftovers:
    [(path, bytes freed)]. A running run (owner alive) or a complete run is never touched."""
    if check_abandoned(run) in ("running", "complete"):
        return []
    reap_servers(run)
    removed = []
    for path in leftovers(run):
        size = disk_usage(path)
        shutil.rmtree(path, ignore_errors=True)
        removed.append((path, size))
    return removed


def reap_servers(run: Run, timeout: float = 30) -> None:
    """Make sure no server of this run survives: SIGTERM, then SIGKILL on a deadline."""
    proc.kill_pids(proc.find_processes(str(run.servers_dir)), grace=timeout)
