"""sysbench prepare / run / cleanup with machine-readable output.

Runs sysbench's bundled OLTP workloads and ours (tpcc, linkbench: `lua/`) through
`sysbench_report.lua`, which prints one JSON object per report interval and one for the whole
run; `--histogram` adds the full latency histogram, from which run-level percentiles are
computed (never from per-interval ones). Our workloads also print per-transaction-type counts
per second and latency histograms per type (`types`, `type_intervals`).
Output is read as it comes, so a long step can store its intervals while it runs.
Parsers are pure functions of the text, tested on recorded output.
"""
from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Protocol

import pandas as pd

from .. import errors, proc
from ..errors import ParamError
from . import LUA_DIR, OLTP, OURS, WRAPPER, environ_script, family, is_script, options, script_options

WORKLOADS = (*OLTP, *OURS)
RUN_PERCENTILES = (50, 95, 99)
# a run may take this long past --time before we call it hung (connect, teardown of many threads)
GRACE_SECONDS = 60


class SysbenchError(proc.ProcError, errors.WorkloadError):
    """sysbench failed; the message carries its argv and stderr tail."""


# ---------------------------------------------------------------- parsers (pure)

_HIST_LINE = re.compile(r"^\s*([0-9.]+)\s+\|[* ]*\s+(\d+)\s*$")
INTERVAL_FIELDS = ("time", "interval", "threads", "events", "reads", "writes", "other",
                   "errors", "reconnects", "latency_pct_ms", "tps", "qps")


def parse_report(text: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The interval records and the total record printed by sysbench_report.lua."""
    intervals, total = [], None
    for line in text.splitlines():
        if not line.startswith('{"kind":'):
            continue
        rec = json.loads(line)
        if rec["kind"] == "interval":
            intervals.append(rec)
        elif rec["kind"] == "total":
            total = rec
    return intervals, total


def parse_types(text: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Our workloads' per-type lines, summed over threads: totals per transaction type
    (count, rollbacks, retries, latency avg/max and percentiles from the merged histogram)
    and counts per type per second of the run (the end of sysbench's report interval). Both
    empty for sysbench's bundled workloads."""
    totals: dict[str, dict[str, Any]] = {}
    per_second: dict[tuple[int, str], int] = {}
    for line in text.splitlines():
        if line.startswith('{"kind":"types"'):
            for name, t in json.loads(line)["types"].items():
                s = totals.setdefault(name, {"count": 0, "rollbacks": 0, "retries": 0, "sum_ms": 0.0,
                                             "max_ms": 0.0, "hist": {}})
                for k in ("count", "rollbacks", "retries", "sum_ms"):
                    s[k] += t[k]
                s["max_ms"] = max(s["max_ms"], t["max_ms"])
                for upper, n in t["hist"]:
                    s["hist"][upper] = s["hist"].get(upper, 0) + n
        elif line.startswith('{"kind":"types_interval"'):
            rec = json.loads(line)
            for name, n in rec["counts"].items():
                key = (int(rec["second"]), name)
                per_second[key] = per_second.get(key, 0) + int(n)
    rows = []
    for name, s in totals.items():
        hist = pd.DataFrame(sorted(s["hist"].items()), columns=["value_ms", "count"])
        rows.append({"type": name, "count": s["count"], "rollbacks": s["rollbacks"],
                     "retries": s["retries"],
                     "latency_avg_ms": s["sum_ms"] / s["count"] if s["count"] else float("nan"),
                     "latency_max_ms": s["max_ms"],
                     **{f"latency_p{q}_ms": histogram_percentile(hist, q) for q in RUN_PERCENTILES}})
    types = pd.DataFrame(rows, columns=["type", "count", "rollbacks", "retries", "latency_avg_ms",
                                        "latency_max_ms", *(f"latency_p{q}_ms" for q in RUN_PERCENTILES)])
    seconds = pd.DataFrame([{"second": s, "type": n, "count": c} for (s, n), c in sorted(per_second.items())],
                           columns=["second", "type", "count"])
    return types, seconds


# open loop (dbs_openloop.lua): latency percentiles per second and of the step
OPEN_LOOP_PERCENTILES = (50, 90, 99, 99.9)
ARRIVALS = ("poisson", "constant")  # the open-loop schedules dbs_openloop.lua knows
# a step sustained its offered load when, at its end, fewer than this share of its arrivals
# were still waiting to start and none had waited this long
SUSTAINED_QUEUE_SHARE, SUSTAINED_LAG_S = 0.02, 1.0


def _pct_name(q: float) -> str:
    """The column name of a percentile.

    >>> _pct_name(99.9), _pct_name(50)
    ('p99_9', 'p50')
    """
    return "p" + f"{q:g}".replace(".", "_")


def _merge(hists: list[list[list[float]]]) -> pd.DataFrame:
    counts: dict[float, int] = {}
    for h in hists:
        for upper, n in h:
            counts[upper] = counts.get(upper, 0) + int(n)
    return pd.DataFrame(sorted(counts.items()), columns=["value_ms", "count"])


@dataclass
class OpenLoop:
    """What an open-loop step measured: `seconds` (per second of the run: arrivals due,
    transactions completed, the queue of due arrivals not yet started and how late its oldest
    was, latency percentiles from the scheduled start), `histogram` (every completed
    transaction's latency from its scheduled start), `unstarted` (the arrivals still queued at
    the end: how long each had waited, a lower bound of its latency) and `totals`."""
    seconds: pd.DataFrame
    histogram: pd.DataFrame
    unstarted: pd.DataFrame
    totals: dict[str, Any]


def parse_open_loop(text: str, rate: float, duration: float) -> OpenLoop:
    """The `ol_*` lines of an open-loop run: per-thread seconds merged, the reporter's queue
    lines, the end line. Latency percentiles of a step that did not sustain its load include
    the unstarted arrivals' waits and are lower bounds (`totals["lower_bound"]`)."""
    per_second: dict[int, dict[str, Any]] = {}
    queue, end = [], None
    for line in text.splitlines():
        if line.startswith('{"kind":"ol_interval"'):
            r = json.loads(line)
            s = per_second.setdefault(int(r["second"]), {"n": 0, "sum_ms": 0.0, "wait_sum_ms": 0.0,
                                                         "max_ms": 0.0, "hists": []})
            for k in ("n", "sum_ms", "wait_sum_ms"):
                s[k] += r[k]
            s["max_ms"] = max(s["max_ms"], r["max_ms"])
            s["hists"].append(r["hist"])
        elif line.startswith('{"kind":"ol_queue"'):
            queue.append(json.loads(line))
        elif line.startswith('{"kind":"ol_end"'):
            end = json.loads(line)
    if end is None:
        raise ValueError("no open-loop end line: the run was not open-loop or did not finish")
    rows = []
    for sec, s in sorted(per_second.items()):
        h = _merge(s["hists"])
        rows.append({"second": sec, "completed": s["n"], "latency_avg_ms": s["sum_ms"] / s["n"],
                     "wait_avg_ms": s["wait_sum_ms"] / s["n"], "latency_max_ms": s["max_ms"],
                     **{f"latency_{_pct_name(q)}_ms": histogram_percentile(h, q)
                        for q in OPEN_LOOP_PERCENTILES}})
    lat = pd.DataFrame(rows, columns=["second", "completed", "latency_avg_ms", "wait_avg_ms",
                                      "latency_max_ms",
                                      *(f"latency_{_pct_name(q)}_ms" for q in OPEN_LOOP_PERCENTILES)])
    q = pd.DataFrame(queue, columns=["time", "due", "started", "queued", "lag_ms", "dropped"])
    q = q.assign(second=q["time"].round().astype("int64")).drop(columns="time")
    q["arrivals"] = q["due"].diff().fillna(q["due"])
    seconds = q.merge(lat, on="second", how="outer").sort_values("second").reset_index(drop=True)
    seconds["completed"] = seconds["completed"].fillna(0).astype("int64")
    hist = _merge([h for s in per_second.values() for h in s["hists"]])
    unstarted = _merge([end["unstarted_hist"]])
    completed = int(hist["count"].sum())
    # the schedule's own window: from the first arrival (sysbench connected) to the end
    window = float(end.get("window_s") or duration)
    lag_end = float(unstarted["value_ms"].max() / 1000) if not unstarted.empty else 0.0
    waiting = end["unstarted"] + end["dropped"]
    sustained = waiting <= SUSTAINED_QUEUE_SHARE * max(end["due"], 1) and lag_end < SUSTAINED_LAG_S
    both = _merge([hist.values.tolist(), unstarted.values.tolist()]) if not sustained else hist
    totals = {"offered_rate": float(rate), "arrivals": int(end["due"]),
              "arrival_rate": end["due"] / window, "completed": completed,
              "achieved_rate": completed / window, "window_s": window, "unstarted": int(end["unstarted"]),
              "dropped": int(end["dropped"]), "end_lag_s": lag_end, "sustained": bool(sustained),
              "lower_bound": not sustained,
              **{f"latency_{_pct_name(q)}_ms": histogram_percentile(both, q) for q in OPEN_LOOP_PERCENTILES},
              "latency_max_ms": float(both["value_ms"].max() if not sustained else seconds["latency_max_ms"].max())
              if len(both) else float("nan")}
    return OpenLoop(seconds, hist, unstarted, totals)


def parse_histogram(text: str) -> pd.DataFrame:
    """The `--histogram` block as rows (value_ms = bucket's upper latency, count)."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.startswith("Latency histogram"):
            inside, rows = True, []
            continue
        if inside:
            m = _HIST_LINE.match(line)
            if m:
                rows.append((float(m.group(1)), int(m.group(2))))
            elif rows and not line.strip().startswith("value"):
                inside = False
    return pd.DataFrame(rows, columns=["value_ms", "count"])


def histogram_percentile(hist: pd.DataFrame, q: float) -> float:
    """The q-th percentile as sysbench computes it: the first bucket whose cumulative count
    reaches q % of all events.

    >>> histogram_percentile(pd.DataFrame({"value_ms": [1.0, 2.0, 3.0], "count": [50, 45, 5]}), 95)
    2.0
    """
    if hist.empty or hist["count"].sum() == 0:
        return float("nan")
    h = hist.sort_values("value_ms")
    need = h["count"].sum() * q / 100.0
    cum = h["count"].cumsum()
    return float(h["value_ms"][cum >= need].iloc[0])


def intervals_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Per-interval rates: one row per report interval, `second` = end of the interval."""
    df = pd.DataFrame(records, columns=list(INTERVAL_FIELDS))
    per_s = df["interval"].where(df["interval"] > 0)
    return pd.DataFrame({
        "second": df["time"].round().astype("int64"),
        "threads_running": df["threads"].astype("int64"),
        "tps": df["tps"].astype(float),
        "qps": df["qps"].astype(float),
        "reads_per_s": df["reads"] / per_s,
        "writes_per_s": df["writes"] / per_s,
        "errors_per_s": df["errors"] / per_s,
        "reconnects_per_s": df["reconnects"] / per_s,
        "latency_p_ms": df["latency_pct_ms"].astype(float),
    })


def run_totals(total: dict[str, Any], hist: pd.DataFrame) -> dict[str, float]:
    """Whole-run figures: rates over the run, latency min/avg/max and percentiles from the
    full histogram."""
    seconds = total["interval"]
    out = {"seconds": seconds, "events": total["events"], "tps": total["events"] / seconds,
           "qps": (total["reads"] + total["writes"] + total["other"]) / seconds,
           "errors": total["errors"], "reconnects": total["reconnects"],
           "latency_min_ms": total["latency_min_ms"], "latency_avg_ms": total["latency_avg_ms"],
           "latency_max_ms": total["latency_max_ms"]}
    for q in RUN_PERCENTILES:
        out[f"latency_p{q}_ms"] = histogram_percentile(hist, q)
    return out


def failure(text: str) -> str | None:
    r"""The first FATAL line of sysbench's output, without its prefix, or None. sysbench
    1.0.20 prints these (a failed CREATE TABLE in a worker thread of `prepare`, say) and may
    still exit with code 0.

    >>> failure("Initializing worker threads...\nFATAL: `sysbench.cmdline.call_command' function failed: x.lua:1: SQL error")
    "`sysbench.cmdline.call_command' function failed: x.lua:1: SQL error"
    >>> failure("Creating table 'sbtest1'...") is None
    True
    """
    m = re.search(r"(?m)^FATAL: (.*)$", text)
    return m.group(1).strip() if m else None


def parse_version(text: str) -> str:
    """The version in `sysbench --version`'s output.

    >>> parse_version("sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)")
    '1.0.20'
    """
    m = re.search(r"sysbench\s+([0-9][0-9.]*\S*)", text)
    if not m:
        raise ValueError(f"not a sysbench version line: {text!r}")
    return m.group(1)


# ---------------------------------------------------------------- runner

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
             seed: int | None = None) -> list[str]:
        pin = ["taskset", "-c", self.cpus] if self.cpus else []
        scale = {"tables": self.tables, "table_size": self.table_size, "warehouses": self.warehouses,
                 "nodes": self.nodes, "payload_compressibility": self.payload_compressibility}
        argv = [*pin, self.binary, str(WRAPPER), "--db-driver=mysql",
                *self.server.sysbench_connection(), f"--mysql-db={self.db}", *options(workload, scale),
                *(script_options(self.script_options) if is_script(workload) else []), f"--threads={threads}"]
        if command == "run":
            argv += [f"--time={duration}", "--events=0", f"--report-interval={interval}",
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
            rate: float | None = None, arrivals: str = "poisson") -> SysbenchResult:
        """One measured (or warm-up) run. Raises SysbenchError, or ServerDied if the
        server went away under it; sysbench is never left running. `on_interval` gets each
        interval's row (an `intervals_frame` of one row) as sysbench prints it.
        `rate` (transactions/s) makes it open-loop: `threads` connections serve arrivals at
        that rate (`arrivals`: "poisson" or "constant"), each transaction timed from its
        scheduled start (`SysbenchResult.open_loop`); sysbench's own latency figures are then
        the service time only."""
        argv = self.argv("run", workload=workload, threads=threads, duration=duration,
                         interval=interval, percentile=percentile, seed=seed)
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
