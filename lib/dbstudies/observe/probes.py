"""Pluggable 1 Hz probes, sampled on one grid with sysbench's report intervals.

Every second the `Sampler` reads SHOW GLOBAL STATUS (InnoDB checkpoint age and LSNs, dirty
and flushed pages, redo written, …) and then each *probe* — a function returning
{variable: value}: CPU seconds of server and client, how busy the host is apart from us
(busy and steal time), bytes the server read and wrote, bytes the datadir's device read and
wrote, and the context switches of server and client threads (the operating system's
counters, read by `counters`).

Sample k is taken at t0 + k·interval, t0 being the moment sysbench was started, so sample k
closes the same second as sysbench's k-th report interval. Rows are long (tidy): one per
(second, variable); counters are cumulative, `rates()` turns them into per-second values and
adds the derived series (checkpoint age in % of its maximum, redo bytes/s) in both families'
terms.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from .counters import (
    CPU_PRESSURE,
    DISK_READ,
    DISK_WRITE,
    HOST_BUSY,
    HOST_STEAL,
    HOST_TOTAL,
    HOST_VARIABLES,
    SERVER_READ,
    SERVER_WRITE,
    ThreadCounts,
    cpu_pressure,
    cpu_seconds,
    device_of,
    disk_io,
    host_cpu_seconds,
    process_io,
)

DEFAULT_STATUS = (
    "Questions", "Com_select", "Com_insert", "Com_update", "Com_delete", "Com_commit",
    "Threads_running", "Threads_connected", "Connections", "Bytes_received", "Bytes_sent",
    "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads",
    "Innodb_buffer_pool_pages_dirty", "Innodb_buffer_pool_wait_free",
    "Innodb_data_reads", "Innodb_data_writes", "Innodb_data_fsyncs", "Innodb_os_log_written",
    "Innodb_checkpoint_age", "Innodb_row_lock_waits", "Innodb_buffer_pool_pages_flushed",
    "Innodb_buffer_pool_pages_total",
    "Threadpool_threads", "Threadpool_idle_threads",
    # MariaDB ≥ 10.5: checkpoint age and its maximum, LSN
    "Innodb_checkpoint_max_age", "Innodb_lsn_current",
    # MySQL ≥ 8.0.30: no checkpoint age — the LSNs and the redo capacity give it
    "Innodb_redo_log_current_lsn", "Innodb_redo_log_checkpoint_lsn",
    "Innodb_redo_log_capacity_resized",
    # buffer-pool fill, rows changed (SQL layer: both families), page compression (MariaDB)
    "Innodb_buffer_pool_pages_data", "Handler_write", "Handler_update", "Handler_delete",
    "Innodb_num_pages_page_compressed", "Innodb_num_pages_page_decompressed",
    # rows read: InnoDB's count (MySQL), the SQL layer's (MariaDB ≥ 10.x has no Innodb_rows_read)
    "Innodb_rows_read", "Rows_read",
)
# gauges are levels, not counters: rates() leaves them as they are
GAUGES = {"Threads_running", "Threads_connected", "Innodb_buffer_pool_pages_dirty",
          "Innodb_buffer_pool_pages_data",
          "Innodb_buffer_pool_pages_total", "Innodb_checkpoint_age", "Innodb_checkpoint_max_age",
          "Innodb_redo_log_capacity_resized", "Threadpool_threads", "Threadpool_idle_threads"}
CHECKPOINT_AGE_PCT, REDO_RATE = "checkpoint_age_pct", "redo_bytes_per_s"
BP_FILL_PCT, BP_HIT_PCT, ROWS_CHANGED = "bp_fill_pct", "bp_hit_pct", "rows_changed_per_s"
Probe = Callable[[], Mapping[str, float]]
CPU_SERVER, CPU_CLIENT = "cpu_server_s", "cpu_client_s"
CPU_SIBLINGS = "cpu_siblings_s"  # the run's other servers (a paired design keeps them up, idle)
# context switches and run delay of every thread of server and client (cumulative, see `ThreadCounts`)
CS_SERVER_VOL, CS_SERVER_INVOL = "cs_server_voluntary", "cs_server_involuntary"
CS_CLIENT_VOL, CS_CLIENT_INVOL = "cs_client_voluntary", "cs_client_involuntary"
WAIT_SERVER, WAIT_CLIENT = "wait_server_ns", "wait_client_ns"  # runnable, waiting for a CPU
ROWS_READ = ("Innodb_rows_read", "Rows_read")  # MySQL's, MariaDB's (sampled with the status)
REDO_LSNS = ("Innodb_lsn_current", "Innodb_redo_log_current_lsn")  # MariaDB's, MySQL's
# a step is flagged as measured on a busy host when, on average over the step, other
# processes used more than this share of the machine (or the hypervisor stole more)
BUSY_OTHER_PCT, BUSY_STEAL_PCT = 10.0, 5.0
COLUMNS = ["second", "offset_s", "variable", "value"]
# per-transaction costs of a step (columns of the steps table): column → (the counter sampled
# — the first one the server gives —, its scale, what it is in words)
COSTS: dict[str, tuple[tuple[str, ...], float, str]] = {
    "cpu_server_us_per_txn": ((CPU_SERVER,), 1e6, "server CPU µs"),
    "cpu_client_us_per_txn": ((CPU_CLIENT,), 1e6, "client CPU µs"),
    "cs_server_voluntary_per_txn": ((CS_SERVER_VOL,), 1.0, "server voluntary context switches"),
    "cs_server_involuntary_per_txn": ((CS_SERVER_INVOL,), 1.0, "server involuntary context switches"),
    "cs_client_voluntary_per_txn": ((CS_CLIENT_VOL,), 1.0, "client voluntary context switches"),
    "cs_client_involuntary_per_txn": ((CS_CLIENT_INVOL,), 1.0, "client involuntary context switches"),
    "wait_server_us_per_txn": ((WAIT_SERVER,), 1e-3, "server µs waiting for a CPU"),
    "wait_client_us_per_txn": ((WAIT_CLIENT,), 1e-3, "client µs waiting for a CPU"),
    "cpu_pressure_us_per_txn": ((CPU_PRESSURE,), 1.0, "host µs with a task waiting for a CPU"),
    "server_read_kb_per_txn": ((SERVER_READ,), 1 / 1024, "KB read by the server"),
    "server_write_kb_per_txn": ((SERVER_WRITE,), 1 / 1024, "KB written by the server"),
    "disk_read_kb_per_txn": ((DISK_READ,), 1 / 1024, "KB read from the device"),
    "disk_write_kb_per_txn": ((DISK_WRITE,), 1 / 1024, "KB written to the device"),
    "redo_bytes_per_txn": (REDO_LSNS, 1.0, "redo bytes"),
    "rows_read_per_txn": (ROWS_READ, 1.0, "rows read"),
}


def default_probes(server: Any, client_pid: int | None, siblings: Sequence[int] = ()) -> list[Probe]:
    """CPU of server and client (and, given their pids, of the run's other servers together),
    host load, the server's I/O, its datadir's device I/O."""
    pid = server.pid
    device = device_of(server.datadir) if getattr(server, "datadir", None) else None

    def cpu() -> dict[str, float]:
        found = {name: cpu_seconds(p) for name, p in ((CPU_SERVER, pid), (CPU_CLIENT, client_pid))}
        if siblings:
            theirs = [cpu_seconds(p) for p in siblings]
            found[CPU_SIBLINGS] = None if None in theirs else sum(theirs)  # one gone: no sum over the span
        return {k: v for k, v in found.items() if v is not None}
    return [cpu, host_cpu_seconds, cpu_pressure, lambda: process_io(pid), lambda: disk_io(device),
            ThreadCounts(pid, (CS_SERVER_VOL, CS_SERVER_INVOL, WAIT_SERVER)),
            ThreadCounts(client_pid, (CS_CLIENT_VOL, CS_CLIENT_INVOL, WAIT_CLIENT))]


class Sampler:
    """Samples one server while a sysbench run goes on (a sysbench.Observer)."""

    def __init__(self, server: Any, interval: float = 1.0, variables=DEFAULT_STATUS,
                 on_rows: Callable[[pd.DataFrame], None] | None = None, siblings: Sequence[int] = ()):
        self.server = server
        self.siblings = tuple(siblings)  # pids of the run's other servers, up while this one is measured
        self.on_rows = on_rows  # each second's rows as they are taken (streamed to disk)
        self.interval = interval
        self.variables = tuple(variables)
        self.rows: list[tuple[int, float, str, float]] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, t0: float, client_pid: int) -> None:
        self.rows, self.error = [], None
        self._stop.clear()
        # no status variables: no connection either (a counted window must hold only the
        # client's statements: the sampler's would be counted with them)
        self._conn = self.server.connect() if self.variables else None
        names = ",".join(f"'{v}'" for v in self.variables)
        self._sql = f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})"
        self._probes = default_probes(self.server, client_pid, self.siblings)
        self._thread = threading.Thread(target=self._loop, args=(t0,), daemon=True,
                                        name="dbstudies-sampler")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None
        try:
            if self._conn is not None:
                self._conn.close()
        except Exception:  # noqa: BLE001 - server may be gone
            pass

    def _loop(self, t0: float) -> None:
        k = 0
        while not self._stop.wait(max(0.0, t0 + k * self.interval - time.monotonic())):
            try:
                self._sample(k, time.monotonic() - t0)
            except Exception as e:  # noqa: BLE001 - the driver notices a dead server itself
                self.error = f"{type(e).__name__}: {e}"
                return
            k += 1

    def _sample(self, k: int, offset: float) -> None:
        status = []
        if self._conn is not None:
            cur = self._conn.cursor()
            cur.execute(self._sql)
            status = cur.fetchall()
            cur.close()
        rows = [(k, offset, name, float(value)) for name, value in status
                if _is_number(value)]
        for probe in self._probes:
            rows += [(k, offset, name, float(v)) for name, v in probe().items()]
        self.rows.extend(rows)
        if self.on_rows is not None:
            self.on_rows(pd.DataFrame(rows, columns=COLUMNS))

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=COLUMNS)

    def _deltas(self) -> dict[str, float]:
        """Each CPU counter's increase from the first to the last sample in which all of them
        were read (so all deltas cover one span), and that span's seconds as "span"."""
        df = self.frame()
        wide = df.pivot_table(index="second", columns="variable", values="value", aggfunc="last")
        cols = [c for c in (CPU_SERVER, CPU_CLIENT, *HOST_VARIABLES) if c in wide]
        both = wide[cols].dropna()
        if len(both) < 2:
            return {}
        offsets = df.groupby("second")["offset_s"].first()
        first, last = both.index[0], both.index[-1]
        out = (both.loc[last] - both.loc[first]).to_dict()
        out["span"] = offsets[last] - offsets[first]
        if CPU_SIBLINGS in wide and wide[CPU_SIBLINGS][[first, last]].notna().all():  # over the same span
            out[CPU_SIBLINGS] = wide.at[last, CPU_SIBLINGS] - wide.at[first, CPU_SIBLINGS]
        return out

    def per_transaction(self, tps: float) -> dict[str, float]:
        """The step's costs per transaction (`COSTS`): each counter's increase per second
        between its first and last reading, over the step's transactions per second `tps`
        (NaN where the counter was not read twice, or no transaction completed)."""
        df = self.frame()
        have = set(df["variable"])
        out = {}
        for column, (counters, scale, _) in COSTS.items():
            name = next((c for c in counters if c in have), None)
            out[column] = np.nan
            if name is None or not tps > 0:
                continue
            mine = df[df["variable"] == name].sort_values("second")
            span = mine["offset_s"].iloc[-1] - mine["offset_s"].iloc[0]
            if len(mine) >= 2 and span > 0:
                delta = mine["value"].iloc[-1] - mine["value"].iloc[0]
                out[column] = delta / span / tps * scale
        return out

    def mean_cpu(self) -> dict[str, float]:
        """Average CPU use (% of one core) of server and client over the sampled span:
        {CPU_SERVER: …, CPU_CLIENT: …}, a key missing where fewer than two samples exist."""
        d = self._deltas()
        return {v: d[v] / d["span"] * 100 for v in (CPU_SERVER, CPU_CLIENT) if v in d}

    def host_load(self) -> dict[str, float]:
        """How busy the host was apart from server and client over the sampled span, in % of
        the whole machine: {"other_pct": …, "steal_pct": …} (empty with < 2 samples), and
        where the run's other servers were read, "foreign_pct": what processes outside the
        run used — a load no arm can have caused (the other servers' background work can
        be an arm's)."""
        d = self._deltas()
        if HOST_TOTAL not in d or not d[HOST_TOTAL]:
            return {}
        ours = d.get(CPU_SERVER, 0.0) + d.get(CPU_CLIENT, 0.0)
        out = {"other_pct": max(0.0, d[HOST_BUSY] - ours) / d[HOST_TOTAL] * 100,
               "steal_pct": d[HOST_STEAL] / d[HOST_TOTAL] * 100}
        if CPU_SIBLINGS in d:
            out["foreign_pct"] = max(0.0, d[HOST_BUSY] - ours - d[CPU_SIBLINGS]) / d[HOST_TOTAL] * 100
        return out


def _is_number(value: Any) -> bool:
    try:
        float(value)
        return True
    except (TypeError, ValueError):
        return False


def checkpoint_age_pct(levels: pd.DataFrame) -> pd.Series | None:
    """Checkpoint age in % of the most the server lets it reach, from sampled levels:
    MariaDB's Innodb_checkpoint_age / Innodb_checkpoint_max_age; MySQL's current − checkpoint
    LSN over its redo capacity. None when the server gives neither.

    >>> checkpoint_age_pct(pd.DataFrame({"Innodb_checkpoint_age": [50.0],
    ...                                  "Innodb_checkpoint_max_age": [200.0]})).tolist()
    [25.0]
    >>> checkpoint_age_pct(pd.DataFrame({"Innodb_redo_log_current_lsn": [900.0],
    ...     "Innodb_redo_log_checkpoint_lsn": [800.0], "Innodb_redo_log_capacity_resized": [1000.0]})).tolist()
    [10.0]
    """
    cols = set(levels.columns)
    if {"Innodb_checkpoint_age", "Innodb_checkpoint_max_age"} <= cols:
        return levels["Innodb_checkpoint_age"] / levels["Innodb_checkpoint_max_age"] * 100
    if {"Innodb_redo_log_current_lsn", "Innodb_redo_log_checkpoint_lsn",
            "Innodb_redo_log_capacity_resized"} <= cols:
        age = levels["Innodb_redo_log_current_lsn"] - levels["Innodb_redo_log_checkpoint_lsn"]
        return age / levels["Innodb_redo_log_capacity_resized"] * 100
    return None


def rates(samples: pd.DataFrame) -> pd.DataFrame:
    """Wide table, one row per second: per-second deltas of counters (CPU as % of one core),
    gauges as sampled, and the derived `checkpoint_age_pct`, `redo_bytes_per_s`,
    `bp_fill_pct` (buffer-pool pages holding data, % of all), `bp_hit_pct` (logical reads
    served without a read from storage, %) and `rows_changed_per_s` (rows written, updated
    and deleted by the SQL layer) where the server gives what they need. The first sample is
    the baseline and has no row.

    >>> s = pd.DataFrame({"second": [0, 0, 0, 1, 1, 1], "offset_s": [0.0] * 3 + [1.0] * 3,
    ...     "variable": ["Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests",
    ...                  "Handler_write"] * 2, "value": [0, 0, 0, 5, 100, 7]})
    >>> rates(s)[["bp_hit_pct", "rows_changed_per_s"]].to_dict("records")
    [{'bp_hit_pct': 95.0, 'rows_changed_per_s': 7.0}]
    """
    wide = samples.pivot_table(index="second", columns="variable", values="value",
                               aggfunc="last").sort_index()
    dt = samples.groupby("second")["offset_s"].first().sort_index().diff()
    out = wide.copy()
    for col in wide.columns:
        if col not in GAUGES:
            out[col] = wide[col].diff().div(dt, axis=0)
    for col in (CPU_SERVER, CPU_CLIENT, CPU_SIBLINGS):
        if col in out:
            out[col] = out[col] * 100
    out = out.assign(**derived(wide, out, dt))
    out = out.drop(columns=[c for c in HOST_VARIABLES if c in out])
    return out.iloc[1:].rename(columns={CPU_SERVER: "cpu_server_pct", CPU_CLIENT: "cpu_client_pct",
                                        CPU_SIBLINGS: "cpu_siblings_pct"})


def derived(wide: pd.DataFrame, per_s: pd.DataFrame, dt: pd.Series) -> dict[str, pd.Series]:
    """`rates`' derived series, each where the server gives what it needs: from the sampled
    values (`wide`), their per-second rates (`per_s`) and the seconds between samples."""
    out = {}
    age = checkpoint_age_pct(wide)
    if age is not None:
        out[CHECKPOINT_AGE_PCT] = age
    lsn = next((c for c in REDO_LSNS if c in wide), None)
    if lsn is not None:
        out[REDO_RATE] = wide[lsn].diff().div(dt, axis=0)
    if {"Innodb_buffer_pool_pages_data", "Innodb_buffer_pool_pages_total"} <= set(wide):
        out[BP_FILL_PCT] = wide["Innodb_buffer_pool_pages_data"] / wide["Innodb_buffer_pool_pages_total"] * 100
    if {"Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests"} <= set(wide):
        asked = per_s["Innodb_buffer_pool_read_requests"]
        out[BP_HIT_PCT] = (1 - per_s["Innodb_buffer_pool_reads"] / asked.where(asked > 0)) * 100
    changed = [c for c in ("Handler_write", "Handler_update", "Handler_delete") if c in wide]
    if changed:
        out[ROWS_CHANGED] = per_s[changed].sum(axis=1, min_count=1)
    return out


# ---------------------------------------------------------------- an idle server settles

SETTLE_VARIABLES = ("Innodb_buffer_pool_pages_dirty", "Innodb_buffer_pool_pages_flushed",
                    "Innodb_checkpoint_age", "Innodb_redo_log_current_lsn",
                    "Innodb_redo_log_checkpoint_lsn")


def flushing_state(server: Any) -> tuple[float, ...]:
    """What changes while a server still flushes after writes: dirty pages, pages flushed
    so far, checkpoint age (MariaDB's, or MySQL's current − checkpoint LSN)."""
    names = ",".join(f"'{v}'" for v in SETTLE_VARIABLES)
    v = {k: float(x) for k, x in server.query(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})")}
    age = v.get("Innodb_checkpoint_age",
                v.get("Innodb_redo_log_current_lsn", 0.0) - v.get("Innodb_redo_log_checkpoint_lsn", 0.0))
    return (v.get("Innodb_buffer_pool_pages_dirty", 0.0), v.get("Innodb_buffer_pool_pages_flushed", 0.0), age)


def settle(server: Any, timeout: float, *, quiet: float = 1.0, every: float = 0.2) -> tuple[float, bool]:
    """Wait until `server`'s background flushing has settled: dirty pages, pages flushed and
    checkpoint age unchanged for `quiet` seconds (polled every `every` s), at most
    `timeout` s. Returns (seconds waited, whether it settled)."""
    t0 = time.monotonic()
    last, since = flushing_state(server), t0
    while True:
        now = time.monotonic()
        if now - since >= quiet:
            return now - t0, True
        if now - t0 >= timeout:
            return now - t0, False
        time.sleep(every)
        state = flushing_state(server)
        if state != last:
            last, since = state, time.monotonic()


def busy(host: dict[str, float]) -> bool:
    """Whether others used the machine during a step: other processes' CPU or the
    hypervisor's steal above their limits (NaN — unknown — is not busy)."""
    return bool(host.get("other_pct", np.nan) > BUSY_OTHER_PCT
                or host.get("steal_pct", np.nan) > BUSY_STEAL_PCT)
