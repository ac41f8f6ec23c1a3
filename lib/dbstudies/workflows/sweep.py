"""Sweeps: a grid of parameter sets run as one study run each, one after another here, or on
benchmark hosts through Dask distributed (`dbstudies sweep`, `dbstudies worker`).

A grid file (YAML) names the study's profile, parameters every run shares, and a `grid` of
parameters with several values each; every combination is one run:

    profile: smoke
    parameters: {duration: 5}
    grid:
      flavour: [mariadb-10.11, mariadb-11.8]
      workloads: [[oltp_read_only], [oltp_point_select]]

Every run is validated before anything starts. A run is the same `dbstudies run` as by hand,
executed by the host that measures it, in its own runs directory; its key (a hash of study,
profile and parameters) is written beside its tables (`sweep.json`), so a sweep run again
skips what already completed. With a scheduler, each run is one Dask task that needs the
worker resource `bench=1` (a `dbstudies worker` has exactly one: one benchmark per host at
a time); the finished run travels back packed (`archive.packed`, checked against its manifest on
arrival) into this machine's runs directory. A worker that dies mid-run fails its task (the scheduler must not retry it:
`allowed-failures` 0); the sweep goes on, and its summary and index page say where the
abandoned run's measurements stayed.
"""
from __future__ import annotations

import contextlib
import dataclasses
import html
import json
import os
import platform
import secrets
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd

from ..core import paths, proc
from ..kit.study import load
from ..store import archive, results
from ..store.results import Run
from . import cluster
from .grid import Job

SWEEPS_DIR = paths.DATA_DIR / "sweeps"
MARKER = "sweep.json"            # beside a run's metadata: which sweep and key it belongs to
STOP_EVENT = "dbstudies-stop-{sweep}"   # set on Ctrl-C: running tasks interrupt their run
WHERE_VARIABLE = "dbstudies-where-{key}"  # a task says here where its run directory is
POLL = 0.5


# ---------------------------------------------------------------- one run, on whichever host

def completed(runs_dir: Path, study: str) -> dict[str, Path]:
    """key → run directory, for the runs of `study` under `runs_dir` a sweep completed."""
    out = {}
    for run in results.list_runs(study, Path(runs_dir), status="complete"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            out[json.loads(run.file(MARKER).read_text())["key"]] = run.path
    return out


def _run_of(record: Mapping[str, Any]) -> Run | None:
    """The run a sweep's record names, where it is on this host (a run kept elsewhere: None)."""
    where = record.get("run_dir")
    return Run(where) if where and results.is_run(where) else None


def execute(job: Job, runs_dir: Path, *, sweep: str, stop: Callable[[], bool] = lambda: False,
            where: Callable[[str], None] = lambda path: None) -> dict[str, Any]:
    """Run `job` here with `dbstudies run` into `runs_dir`, its output in the run directory's
    `sweep.log`; `stop()` is polled and, once true, interrupts the run (SIGINT: it ends
    interrupted, servers stopped); `where(path)` hears of the run directory as soon as it
    exists. Returns the job's record: key, status, run directory, host."""
    runs_dir = Path(runs_dir).resolve()
    before = set((runs_dir / job.name).glob("*"))
    log = runs_dir / f".sweep-{job.key}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    run_dir: Path | None = None
    interrupted = False
    with open(log, "wb") as out:
        p = proc.spawn(job.argv(runs_dir), stdout=out, stderr=subprocess.STDOUT, cwd=paths.REPO)
        try:
            while p.poll() is None:
                if run_dir is None:
                    new = sorted(set((runs_dir / job.name).glob("*")) - before)
                    if new and results.is_run(new[0]):
                        run_dir = new[0]
                        Run(run_dir).file(MARKER).write_text(json.dumps(
                            {"sweep": sweep, "key": job.key, "job": dataclasses.asdict(job)}))
                        where(f"{platform.node()}:{run_dir}")
                if stop():
                    raise KeyboardInterrupt
                time.sleep(POLL)
        except KeyboardInterrupt:  # Ctrl-C here, or the sweep's stop event: end the run cleanly
            interrupted = True
            p.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(300)
        finally:
            if p.poll() is None:
                proc.kill(p, grace=30)
    return _outcome(job, run_dir, log, interrupted)


def _outcome(job: Job, run_dir: Path | None, log: Path, interrupted: bool) -> dict[str, Any]:
    """A job's record once its `dbstudies run` ended: how the run ended (its log kept in the run
    directory), or — no run directory — the log's last lines."""
    if run_dir is None:
        return {"key": job.key, "label": job.label, "status": "interrupted" if interrupted else "failed",
                "host": platform.node(), "run_dir": None, "error": _tail(log), "interrupted": interrupted}
    run = Run(run_dir)
    log.replace(run.file("sweep.log"))
    r = run.record
    return {"key": job.key, "label": job.label, "status": r.status,
            "host": platform.node(), "run_dir": str(run_dir), "error": r.error,
            "interrupted": interrupted}


def _tail(log: Path, lines: int = 8) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    return ""


def worker_runs_dir(worker: Any) -> Path:
    """Where a Dask worker's runs stay: `runs-<worker name>` beside its scratch space (not
    inside it: the nanny wipes a dead worker's scratch directory, and an abandoned run's
    measurements must stay where they were measured)."""
    scratch = Path(worker.local_directory)
    root = scratch.parent.parent if scratch.parent.name == "dask-scratch-space" else scratch
    return root / f"runs-{worker.name}"


def remote_task(job: Job, sweep: str) -> dict[str, Any]:
    """A Dask task on a benchmark host: the run in the worker's own runs directory
    (`worker_runs_dir`), then the finished run directory, packed, for the client."""
    from distributed import Event, Variable, get_worker
    runs_dir = worker_runs_dir(get_worker())
    stop = Event(STOP_EVENT.format(sweep=sweep))
    place = Variable(WHERE_VARIABLE.format(key=job.key))
    record = execute(job, runs_dir, sweep=sweep, stop=stop.is_set, where=place.set)
    if record["run_dir"]:
        record["archive"] = archive.packed(Run(record["run_dir"]))
    return record


# ---------------------------------------------------------------- the sweep

@dataclass
class Sweep:
    """A sweep's jobs, where its runs land, and its records as they come."""
    study: str
    jobs: list[Job]
    runs_dir: Path = paths.RUNS_DIR
    root: Path = SWEEPS_DIR
    id: str = dataclasses.field(default_factory=lambda: time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
                                + "-" + secrets.token_hex(3))
    records: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    say: Callable[[str], None] = print

    @property
    def path(self) -> Path:
        return Path(self.root) / self.id

    def todo(self) -> list[Job]:
        """The jobs not yet completed by an earlier sweep (recorded as skipped)."""
        done = completed(self.runs_dir, self.study)
        out = []
        for job in self.jobs:
            if job.key in done:
                self._record({"key": job.key, "label": job.label, "status": "complete",
                              "skipped": True, "run_dir": str(done[job.key]),
                              "host": Run(done[job.key]).record.host.hostname})
            else:
                out.append(job)
        return out

    def run_here(self) -> None:
        """Every job in turn on this machine; Ctrl-C interrupts the running one and stops."""
        for job in self.todo():
            self.say(f"sweep: {job.label} …")
            record = execute(job, self.runs_dir, sweep=self.id)
            self._record(record)
            if record.get("interrupted"):
                self.say("sweep: interrupted; the runs after this one were not started")
                raise KeyboardInterrupt

    def run_on(self, way: cluster.Access, *, timeout: float = 30) -> None:
        """Every job as a Dask task (resource bench=1) on the workers of the scheduler `way`
        reaches (mutual TLS: `cluster`); finished run directories come back into `runs_dir`.
        Ctrl-C cancels the pending tasks and interrupts the running ones (their runs end
        interrupted, servers stopped)."""
        from distributed import Client, Event, Variable, as_completed
        with Client(way.address, timeout=timeout, security=way.security()) as client:
            stop = Event(STOP_EVENT.format(sweep=self.id), client=client)
            futures = {}
            for job in self.todo():
                futures[client.submit(remote_task, job, self.id, key=f"dbstudies-{self.id}-{job.key}",
                                      resources={"bench": 1}, pure=False, retries=0)] = job
            self.say(f"sweep {self.id}: {len(futures)} runs on {way.address}")
            try:
                for future in as_completed(futures):
                    job = futures[future]
                    self._record(self._collect(future, job, Variable(
                        WHERE_VARIABLE.format(key=job.key), client=client)))
            except KeyboardInterrupt:
                stop.set()
                for f in futures:
                    if not f.done():
                        f.cancel()
                self.say("sweep: interrupted; pending runs cancelled, running ones stopped")
                raise

    def _collect(self, future: Any, job: Job, place: Any) -> dict[str, Any]:
        try:
            record = future.result()
        except Exception as e:  # noqa: BLE001 - the worker died, the task raised
            where = None
            with contextlib.suppress(Exception):
                where = place.get(timeout=1)
            return {"key": job.key, "label": job.label, "host": where.split(":", 1)[0] if where else None,
                    "status": "abandoned" if where else "failed", "run_dir": None,
                    "kept_at": where, "error": f"{type(e).__name__}: {e}"}
        packed = record.pop("archive", None)
        if packed:
            record["kept_at"] = f"{record['host']}:{record['run_dir']}"
            record["run_dir"] = str(archive.received(packed, Path(self.runs_dir) / job.name))
        return record

    def _record(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / "records.json").write_text(json.dumps(self.records, indent=1))
        self.say(f"sweep: {record['label']}: {record['status']}"
                 + (" (completed earlier)" if record.get("skipped") else ""))

    def summary(self) -> str:
        counts = {}
        for r in self.records:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        lines = [f"sweep {self.id}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))]
        lines += [f"  {r['status']}: {r['label']}" + (f" — kept at {r['kept_at']}" if r.get("kept_at")
                                                       and r["status"] != "complete" else "")
                  + (f" — {r['error'].splitlines()[-1]}" if r.get("error") and r["status"] != "complete" else "")
                  for r in self.records]
        return "\n".join(lines)

    def swept(self) -> list[str]:
        """The parameters whose value differs between the sweep's jobs (none for one job)."""
        names = dict.fromkeys(k for j in self.jobs for k in j.parameters)
        return [k for k in names if len({json.dumps(j.parameters.get(k)) for j in self.jobs}) > 1]

    def combined(self) -> pd.DataFrame:
        """The sweep's complete runs in one table: per run (its swept values, or the job's
        label when nothing varies), arm, workload and client threads, the number of measured steps and their
        median QPS and p99 (ms). Empty when no run measured sysbench steps (DBT3)."""
        frames = []
        swept = self.swept()
        jobs = {j.key: j for j in self.jobs}
        # a study may say which steps a sweep compares (latency: its offered levels)
        study = load(self.jobs[0].study) if self.jobs else None
        for r in self.records:
            if r.get("status") != "complete" or not r.get("run_dir"):
                continue
            job = jobs.get(r["key"])
            name = (", ".join(f"{k}={json.dumps(job.parameters.get(k))}" for k in swept)
                    if job and swept else r["label"])
            run = Run.open(r["run_dir"])
            own = study.sweep_steps(run, run.params(study)) if study and results.finished_steps(run) else None
            steps = (own if own is not None else results.measured(run)) if results.finished_steps(run) else pd.DataFrame()
            if steps.empty:
                continue
            frames.append(steps.groupby(["arm", "workload", "threads"], sort=False)
                          .agg(steps=("qps", "size"), qps_median=("qps", "median"),
                               p99_ms_median=("latency_p99_ms", "median"))
                          .reset_index().assign(run=name))
        columns = ["run", "arm", "workload", "threads", "steps", "qps_median", "p99_ms_median"]
        return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)

    def index(self) -> Path:
        """data/sweeps/<id>/index.html: every run with its status, host, headline and a
        link to its report; then the runs side by side (`combined`: a table and a figure of
        QPS and p99 per run). Each run's report is rendered again with a link back here."""
        from ..report.render import conclusion_text, page, render
        rows = []
        for r in self.records:
            run = _run_of(r)
            report = run.report if run else None
            head = ""
            if run and run.notebook.exists():
                text = conclusion_text(run.notebook) or ""
                head = next((ln.lstrip("- ").replace("**", "") for ln in text.splitlines()
                             if ln.strip()), "")
            link = (f"<a href='{html.escape(os.path.relpath(report, self.path))}'>report</a>"
                    if report and report.exists() else html.escape(r.get("kept_at") or "—"))
            rows.append(f"<tr><td>{html.escape(r['label'])}</td><td>{html.escape(r['status'])}"
                        f"{' (earlier)' if r.get('skipped') else ''}</td>"
                        f"<td>{html.escape(r.get('host') or '')}</td><td>{link}</td>"
                        f"<td>{html.escape(head)}</td></tr>")
        self.path.mkdir(parents=True, exist_ok=True)
        both = self._side_by_side()
        out = page(self.path / "index.html", f"sweep {self.id}", [
            f"<h1>Sweep {self.id}: {html.escape(self.study)}</h1>",
            f"<p>{html.escape(self.summary().splitlines()[0])}</p><table class='dbs-table'><tr><th>run</th>"
            f"<th>status</th><th>host</th><th>report</th><th>headline</th></tr>" + "".join(rows) + "</table>", both])
        for r in self.records:  # each report links back to this page
            run = _run_of(r)
            if run and run.file(MARKER).exists() and run.notebook.exists():
                marker = json.loads(run.file(MARKER).read_text())
                run.file(MARKER).write_text(json.dumps({**marker, "index": str(out.resolve()),
                                                        "indexed_by": self.id}))
                render(run)
        return out

    def _side_by_side(self) -> str:
        """The combined table and its figures as HTML (figures saved under figures/)."""
        from .. import plots
        table = self.combined()
        if table.empty:
            return ""
        shown = []
        for metric, label, name in (("qps_median", "queries per second", "qps"),
                                    ("p99_ms_median", "p99 latency (ms)", "p99")):
            fig = plots.sweep(table, metric, label)
            plots.save(fig, self.path / "figures", name)
            plots.plt.close(fig)
            shown.append(f"<p><img src='figures/{name}.png' alt='{html.escape(label)} per run of the sweep'></p>")
        body = table.to_html(index=False, float_format=lambda v: f"{v:,.3g}" if v < 100 else f"{v:,.0f}")
        return ("<h2>The runs side by side</h2><p>Per run of the sweep (its swept values), arm, "
                "workload and client threads: the medians over the run's measured steps. Each "
                "run's own report holds its verdicts.</p>" + "".join(shown) + body)
