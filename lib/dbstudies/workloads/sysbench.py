"""sysbench prepare / run / cleanup with machine-readable output.

Runs sysbench's bundled OLTP workloads and ours (tpcc, linkbench: `lua/`) through
`sysbench_report.lua`, which prints one JSON object per report interval and one for the whole
run; `--histogram` adds the full latency histogram, from which run-level percentiles are
computed (never from per-interval ones). Our workloads also print per-transaction-type counts
per second and latency histograms per type (`types`, `type_intervals`).
Output is read as it comes, so a long step can store its intervals while it runs; what it
says is read by `sysbench_output`'s parsers.
"""
from __future__ import annotations

import json
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Protocol

import pandas as pd

from ..core import errors, proc
from ..core.errors import ParamError
from . import LUA_DIR, OLTP, OURS, WRAPPER, environ_script, family, is_script, options, script_options
from .sysbench_output import (
    OpenLoop,
    failure,
    intervals_frame,
    parse_histogram,
    parse_open_loop,
    parse_report,
    parse_types,
    parse_version,
    run_totals,
)

WORKLOADS = (*OLTP, *OURS)
ARRIVALS = ("poisson", "constant")  # the open-loop schedules dbs_openloop.lua knows
# a run may take this long past --time before we call it hung (connect, teardown of many threads)
GRACE_SECONDS = 60


class SysbenchError(proc.ProcError, errors.WorkloadError):
    """sysbench failed; the message carries its argv and stderr tail."""


class Target(Protocol):
    """What sysbench needs of a server (a `servers.Server` or `RemoteServer` is one)."""
    def sysbench_connection(self) -> list[str]: ...
    def check_alive(self, during: str = ...) -> None: ...
    def query(self, sql: str) -> list[tuple]: ...


class Observer(Protocol):
    """Something that watches a run (the status sampler is one)."""
    def start(self, t0: float, client_pid: int) -> None: ...
    def stop(self) -> None: ...


@dataclass
class SysbenchResult:
    workload: str
    threads: int
    duration: int
    argv: list[str]
    env: dict[str, str]
    started_at: float
    intervals: pd.DataFrame
    histogram: pd.DataFrame
    totals: dict[str, float]
    stdout: str = field(repr=False)
    types: pd.DataFrame = field(default_factory=pd.DataFrame)          # our workloads: per type
    type_intervals: pd.DataFrame = field(default_factory=pd.DataFrame)  # … per type per second
    open_loop: OpenLoop | None = None  # a run at an offered rate


def version(binary: str = "sysbench") -> str:
    return parse_version(proc.run([binary, "--version"], timeout=30).stdout)


@dataclass
class Sysbench:
    """sysbench against one server's socket. `cpus` pins the client (taskset list).
    `tables`, `table_size`: the OLTP scale; `warehouses`: TPC-C's; `nodes` and
    `payload_compressibility` (0..1): LinkBench's."""
    server: Target
    db: str = "sbtest"
    tables: int = 1
    table_size: int = 10000
    warehouses: int = 1
    nodes: int = 10000
    payload_compressibility: float = 0.5
    cpus: str | None = None
    binary: str = "sysbench"
    table_options: str | None = None
    script_options: dict[str, Any] = field(default_factory=dict)  # a script workload's own options
    calls: list[dict[str, Any]] = field(default_factory=list)  # argv + env of every call

    def env(self, workload: str) -> dict[str, str]:
        if workload not in WORKLOADS and not is_script(workload):
            raise ParamError([f"unknown sysbench workload {workload!r}; known: {', '.join(WORKLOADS)} "
                              "or a script of your own (a path ending in .lua)"])
        env = {**environ_script(workload), "DBSTUDIES_LUA_DIR": str(LUA_DIR)}
        if self.table_options:
            env["DBSTUDIES_TABLE_OPTIONS"] = self.table_options
        return env

    def argv(self, command: str, *, workload: str = "oltp_read_only", threads: int = 1,
             duration: int | None = None, interval: int = 1, percentile: int = 99,
             seed: int | None = None, events: int | None = None) -> list[str]:
        pin = ["taskset", "-c", self.cpus] if self.cpus else []
        scale = {"tables": self.tables, "table_size": self.table_size, "warehouses": self.warehouses,
                 "nodes": self.nodes, "payload_compressibility": self.payload_compressibility}
        argv = [*pin, self.binary, str(WRAPPER), "--db-driver=mysql",
                *self.server.sysbench_connection(), f"--mysql-db={self.db}", *options(workload, scale),
                *(script_options(self.script_options) if is_script(workload) else []), f"--threads={threads}"]
        if command == "run":
            argv += [f"--time={0 if events else duration}", f"--events={events or 0}", f"--report-interval={interval}",
                     "--histogram=on", f"--percentile={percentile}"]
        if seed is not None and command in ("run", "prepare"):
            argv.append(f"--rand-seed={seed}")
        return argv + [command]

    def _record(self, command: str, workload: str, argv: list[str], env: dict[str, str]) -> None:
        self.calls.append({"command": command, "workload": workload, "argv": argv, "env": env,
                           "at": time.time()})

    def _call(self, command: str, workload: str, timeout: float, **kw: Any) -> proc.Result:
        argv, env = self.argv(command, workload=workload, **kw), self.env(workload)
        self._record(command, workload, argv, env)
        try:
            res = proc.run(argv, env=env, timeout=timeout)
        except proc.ProcError as e:
            self.server.check_alive(during=f"sysbench {command}")
            raise SysbenchError(e.argv, e.returncode, e.stdout_tail, e.stderr_tail) from None
        failed = failure(res.stdout + res.stderr)
        if failed:  # sysbench 1.0.20 exits 0 when a worker thread's prepare fails
            raise SysbenchError(argv, res.returncode, res.stdout, res.stderr,
                                reason=f"failed ({failed}) although it exited with code 0")
        return res

    def prepare(self, workload: str = "oltp_read_only", threads: int | None = None,
                seed: int | None = None) -> None:
        """Create the database and load the tables of `workload`'s family (threads: parallel
        loaders ≤ OLTP tables, or ≤ TPC-C warehouses; `seed`: the same data every time)."""
        self.server.query(f"CREATE DATABASE IF NOT EXISTS `{self.db}`")
        units = {"oltp": self.tables, "tpcc": self.warehouses}.get(family(workload), threads or 1)
        self._call("prepare", workload, timeout=24 * 3600, threads=min(units, threads or units),
                   seed=seed)

    def cleanup(self, workload: str = "oltp_read_only") -> None:
        self._call("cleanup", workload, timeout=3600)

    def run(self, workload: str, threads: int, duration: int, *, interval: int = 1,
            percentile: int = 99, seed: int | None = None, observer: Observer | None = None,
            on_interval: Callable[[pd.DataFrame], None] | None = None,
            rate: float | None = None, arrivals: str = "poisson",
            events: int | None = None) -> SysbenchResult:
        """One measured (or warm-up) run. Raises SysbenchError, or ServerDied if the
        server went away under it; sysbench is never left running. `on_interval` gets each
        interval's row (an `intervals_frame` of one row) as sysbench prints it.
        `rate` (transactions/s) makes it open-loop: `threads` connections serve arrivals at
        that rate (`arrivals`: "poisson" or "constant"), each transaction timed from its
        scheduled start (`SysbenchResult.open_loop`); sysbench's own latency figures are then
        the service time only. `events`: that many transactions instead of `duration`
        seconds (which then bounds how long they may take)."""
        argv = self.argv("run", workload=workload, threads=threads, duration=duration,
                         interval=interval, percentile=percentile, seed=seed, events=events)
        env = {**self.env(workload), "DBSTUDIES_T0": f"{time.time():.3f}"}  # our per-type seconds' origin
        if rate is not None:
            problems = [f"rate must be a positive number of transactions/s, not {rate!r}"
                        ] if not (isinstance(rate, (int, float)) and 0 < rate < 1e7) else []
            problems += [f"arrivals must be one of {', '.join(ARRIVALS)}, not {arrivals!r}"
                         ] if arrivals not in ARRIVALS else []
            if problems:
                raise ParamError(problems)
            env.update(DBSTUDIES_RATE=f"{rate:g}", DBSTUDIES_ARRIVALS=arrivals,
                       DBSTUDIES_DURATION=str(duration))
            if seed is not None:
                env["DBSTUDIES_OL_SEED"] = str(seed)
        self._record("run", workload, argv, env)
        out, err = self._wait(argv, env, duration + GRACE_SECONDS + threads / 20, observer,
                              on_interval)
        intervals, total = parse_report(out)
        if total is None:
            raise SysbenchError(argv, 0, out, err, reason="printed no final report")
        hist = parse_histogram(out)
        types, per_second = parse_types(out)
        open_loop = parse_open_loop(out, rate, duration) if rate is not None else None
        return SysbenchResult(workload, threads, duration, argv, env, self.calls[-1]["at"],
                              intervals_frame(intervals), hist, run_totals(total, hist), out,
                              types, per_second, open_loop)

    def _wait(self, argv: list[str], env: dict[str, str], timeout: float,
              observer: Observer | None,
              on_interval: Callable[[pd.DataFrame], None] | None = None) -> tuple[str, str]:
        """Run sysbench to completion while watching the server; kill it on any failure.
        Its output is read line by line as it comes (intervals go to `on_interval`)."""
        t0 = time.monotonic()
        p = proc.spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        out = _Reader(p.stdout, on_interval)
        err = _Reader(p.stderr)
        try:
            if observer is not None:
                observer.start(t0, p.pid)
            try:
                self._watch(p, t0 + timeout, out)
            finally:
                if observer is not None:
                    observer.stop()
        except BaseException:
            proc.kill(p, grace=2)
            raise
        finally:
            out.join(), err.join()
        if p.returncode != 0:
            self.server.check_alive(during=f"sysbench run ({' '.join(argv[-3:])})")
            raise SysbenchError(argv, p.returncode, out.text, err.text)
        return out.text, err.text

    def _watch(self, p: subprocess.Popen, deadline: float, out: "_Reader") -> None:
        while True:
            try:
                p.wait(timeout=0.5)
                return
            except subprocess.TimeoutExpired:
                pass
            if out.error is not None:  # storing a streamed interval failed (disk full …)
                raise out.error
            self.server.check_alive(during="sysbench run")  # raises ServerDied
            if time.monotonic() > deadline:
                raise SysbenchError(p.args, None, reason="hung: still running past its deadline")


class _Reader:
    """Reads a pipe to its end in a thread; interval lines also go to `on_interval`."""

    def __init__(self, pipe: IO[bytes], on_interval: Callable[[pd.DataFrame], None] | None = None):
        self.lines: list[str] = []
        self.error: BaseException | None = None
        self._pipe, self._on_interval = pipe, on_interval
        self._thread = threading.Thread(target=self._read, daemon=True, name="dbstudies-sysbench-reader")
        self._thread.start()

    def _read(self) -> None:
        for raw in iter(self._pipe.readline, b""):
            line = raw.decode(errors="replace")
            self.lines.append(line)
            if self._on_interval is not None and self.error is None \
                    and line.startswith('{"kind":"interval"'):
                try:
                    self._on_interval(intervals_frame([json.loads(line)]))
                except Exception as e:  # noqa: BLE001 - raised in the watching thread
                    self.error = e
        self._pipe.close()

    def join(self) -> None:
        self._thread.join(10)

    @property
    def text(self) -> str:
        return "".join(self.lines)
