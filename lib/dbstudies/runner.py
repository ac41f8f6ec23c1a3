"""The one owner of a run's status, from creation to complete / failed / interrupted.

A run is owned by the process that created it, recorded in its metadata (`owner`):

- `dbstudies run` (this module's `execute`) creates the run, executes the study's notebook
  through papermill in a kernel, and sets the final status from what happened: complete,
  failed (with the error) or interrupted (SIGINT or SIGTERM). It also reaps any server the
  kernel left behind and renders the report.
- A notebook run from JupyterLab (or plain papermill) creates its own run: the kernel owns
  it; `guard` marks it failed or interrupted when measuring raises, and the notebook's last
  cell (`Study.finish` → `notebook_done`) marks it complete.

Only the owner writes the status, so a kernel that measures a CLI-owned run never does.
"""
from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from . import paths, proc
from .errors import ParamError, StoreError
from .params import as_dict
from .results import Run, disk_usage, export_figures

EXIT_FAILED, EXIT_INTERRUPTED = 1, 130  # bad input (a DbStudiesError) is the CLI's 2


# ---------------------------------------------------------------- ownership

def create_run(study: str, p: Any, root: str | os.PathLike, kind: str) -> Run:
    """A new run directory owned by this process (`kind`: cli or notebook)."""
    run = Run.create(study, as_dict(p), root=Path(root))
    run.update(owner={"kind": kind, "pid": os.getpid(), "host": socket.gethostname()})
    return run


def open_run(study: str, p: Any, run_dir: str | os.PathLike | None = None,
             root: str | os.PathLike | None = None) -> Run:
    """The CLI's run (`run_dir`: owned by the CLI), or a new one owned by this notebook."""
    if run_dir:
        return Run.open(run_dir)
    return create_run(study, p, root or paths.RUNS_DIR, "notebook")


def owns(run: Run) -> bool:
    owner = run.metadata.get("owner") or {}
    return owner.get("pid") == os.getpid() and owner.get("host") == socket.gethostname()


def _settle(run: Run, status: str, error: str | None = None) -> None:
    """Record how the run ended, once; a complete run's figures go to figures/<study>/."""
    if run.status != "running":
        return
    run.finish(status, error)
    if status == "complete" and (run.path / "figures").exists() \
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
            _settle(run, "interrupted", "interrupted (KeyboardInterrupt)")
        raise
    except BaseException as e:
        if owns(run):
            _settle(run, "failed", f"{type(e).__name__}: {e}")
        raise


def notebook_done(run: Run) -> None:
    """A notebook reached its end: complete the run if the notebook owns it."""
    if owns(run):
        _settle(run, "complete")


# ---------------------------------------------------------------- abandoned runs, clean-up

def owner_alive(run: Run) -> bool | None:
    """Whether the process that owns the run still exists (None: unknown, e.g. another host)."""
    owner = run.metadata.get("owner") or {}
    if not owner.get("pid") or owner.get("host") != socket.gethostname():
        return None
    try:
        os.kill(owner["pid"], 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def check_abandoned(run: Run) -> str:
    """The run's status, after marking a running run whose owner is gone `abandoned`."""
    if run.status == "running" and owner_alive(run) is False:
        run.finish("abandoned", f"its owner (pid {run.metadata['owner']['pid']}) is gone; "
                                "`dbstudies clean` removes what it left behind")
    return run.status


def leftovers(run: Run) -> list[Path]:
    """What a run that did not end cleanly can leave behind: server datadirs in the run
    directory and the servers' private socket directories (/tmp/dbs-…)."""
    found = sorted(p for p in (run.path / "server").glob("*/datadir") if p.is_dir())
    for server in run.metadata.get("servers", []):
        sockdir = Path(server.get("socket") or "/nonexistent").parent
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


# ---------------------------------------------------------------- dbstudies run

class _Interrupted(KeyboardInterrupt):
    def __init__(self, signame: str):
        super().__init__(signame)
        self.signame = signame


def _on_signal(signum: int, frame: Any) -> None:
    raise _Interrupted(signal.Signals(signum).name)


def execute(name: str, profile: str, pairs: Sequence[Sequence[str]], runs_dir: Path,
            kernel: str | None = None) -> int:
    """`dbstudies run`: validate, create the run, execute the notebook, settle, report.
    Bad parameters or runs directory raise a DbStudiesError before anything starts."""
    from .study import load
    names = [n for n, _ in pairs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ParamError([f"{n}: given more than once" for n in dupes])
    study = load(name)
    p = study.resolve(profile, **dict(pairs))  # raw text: each is parsed for its type
    try:
        run = create_run(study.name, p, runs_dir, "cli")
    except OSError as e:
        raise StoreError(f"cannot create a run directory under {runs_dir}: "
                         f"{e.strerror or e}") from None
    print(f"dbstudies: run directory {run.path}", flush=True)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)  # even if started with SIGINT ignored
    try:
        code = _papermill(study.name, run, {**as_dict(p), "run_dir": str(run.path)}, kernel)
    except KeyboardInterrupt as e:
        signame = getattr(e, "signame", "SIGINT")
        _settle(run, "interrupted", f"interrupted by {signame}")
        reap_servers(run)
        print(f"dbstudies: interrupted ({signame}); what was measured is in {run.path}",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # noqa: BLE001 - the kernel died, papermill could not start it, …
        _settle(run, "failed", f"{type(e).__name__}: {e}")
        reap_servers(run)
        print(f"dbstudies: the study could not be executed: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAILED
    reap_servers(run)
    if (run.path / "notebook.ipynb").exists():
        from .report import render
        print(f"dbstudies: report {render(run)}")
    print(f"dbstudies: run {run.status}: {run.path}")
    return code


def _papermill(study: str, run: Run, nb_params: dict[str, Any], kernel: str | None) -> int:
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("papermill").addFilter(
        lambda r: not r.getMessage().startswith(("Executing", "Ending Cell")))
    try:
        pm.execute_notebook(paths.NOTEBOOKS_DIR / f"{study}.ipynb", run.path / "notebook.ipynb",
                            parameters=nb_params, kernel_name=kernel or default_kernel(),
                            cwd=str(paths.NOTEBOOKS_DIR), log_output=True, progress_bar=False)
    except PapermillExecutionError as e:
        _settle(run, "failed", f"{e.ename}: {e.evalue}")
        print(f"dbstudies: the study failed: {e.ename}: {e.evalue}", file=sys.stderr)
        return EXIT_FAILED
    _settle(run, "complete")
    return 0


def reap_servers(run: Run, timeout: float = 30) -> None:
    """Make sure no server of this run survives: SIGTERM, then SIGKILL on a deadline."""
    pids = proc.find_processes(str(run.path / "server"))
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if Path(f"/proc/{p}").exists()]
        time.sleep(0.1)
    for pid in pids:
        _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def default_kernel() -> str:
    from jupyter_client.kernelspec import find_kernel_specs
    return "dbstudies" if "dbstudies" in find_kernel_specs() else "python3"
