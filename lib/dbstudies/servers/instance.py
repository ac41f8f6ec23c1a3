"""A private server instance: its own datadir, my.cnf, socket and free loopback port,
started and stopped by us. It never touches the system service, /etc/mysql or port 3306.

Usage (tests/test_server.py runs it for real):

    with Server(load_flavour("mariadb-10.11"), "/tmp/x", max_clients=64) as s:
        s.start()                                   # init on first start
        s.query("SELECT @@version")
        s.restart(intent=Intent(thread_pool=True))  # this start only

Servers are started from the calling thread with PDEATHSIG: if the process that started
them dies, the kernel sends the server SIGTERM, so no server outlives its Python.
"""
from __future__ import annotations

import atexit
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..core import paths, proc
from ..core.errors import ServerError
from . import launch
from .cnf import BASE_INTENT, Intent, norm_key, read_cnf, render_cnf
from .facts import aio_backend, binary_record
from .flavour import Flavour
from .place import check_port, free_port, parse_cpus

DEFAULT_MAX_CONNECTIONS = 151
CONNECTION_HEADROOM = 16  # admin, sampler and status connections on top of the clients


class ServerDied(ServerError):
    """The server process exited while we were using it."""



# ---------------------------------------------------------------- servers

_LIVE: dict[int, "Server"] = {}


def _stop_all() -> None:
    for server in list(_LIVE.values()):
        try:
            server.stop(timeout=20)
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


atexit.register(_stop_all)


def _drop_page_cache() -> bool:
    """Drop the OS page cache if we may (root); returns whether it was dropped."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


# the client library's errors when a server is not there (any more): can't connect through
# the socket / to the host, server has gone away, lost connection during the query, lost
# connection during the handshake
CONNECTION_LOST = frozenset({2002, 2003, 2006, 2013, 2055})


class SqlClient:
    """Statements over `connect()` (a private server's socket, a remote one's TCP)."""

    def query(self, sql: str) -> list[tuple]:
        with self.connect() as c:
            cur = c.cursor()
            cur.execute(sql)
            rows = cur.fetchall() if cur.with_rows else []
            cur.close()
            return rows

    def variables(self) -> dict[str, str]:
        return dict(self.query("SHOW GLOBAL VARIABLES"))


@dataclass
class Server(SqlClient):
    """A private server instance. Use as a context manager: it is always stopped on exit.

    `intent` (said in the flavour's dialect) and `settings` (plain variables, on top) apply
    at every start over the flavour's cnf fragments; a start's own intent and settings go on
    top, for that start only; `max_clients` raises max_connections to
    cover that many client connections; `cpus` pins the server (taskset list, e.g. "0-3");
    `wrapper` is a program the server runs under (`launch.Wrapper`: valgrind, `callgrind`),
    inside the flavour's tree for a rootfs flavour.
    """
    flavour: Flavour
    workdir: Path
    settings: dict[str, Any] = field(default_factory=dict)
    intent: Intent | None = None
    port: int | None = None
    max_clients: int = 0
    cpus: str | None = None
    log_dir: Path | None = None
    ready_timeout: float = 120.0
    wrapper: launch.Wrapper | None = None  # what the server runs under (valgrind)
    cnf_dir: Path = paths.CNF_DIR

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir).resolve()
        self.log_dir = Path(self.log_dir or self.workdir).resolve()
        self.datadir = self.workdir / "datadir"
        self.cnf_path = self.workdir / "my.cnf"
        self.error_log = self.log_dir / f"{self.flavour.name}.err"
        if self.port is None:
            self.port = free_port()
        check_port(self.port)
        # short, private socket dir (sun_path ≤ 107 bytes); created when my.cnf is written
        self._sockdir = Path(tempfile.gettempdir()) / f"dbs-{secrets.token_hex(4)}"
        self.socket = self._sockdir / "server.sock"
        self._proc: subprocess.Popen | None = None
        self.version: str | None = None
        self.events: list[dict[str, Any]] = []  # start/stop/restart log, for metadata

    # -- configuration
    @property
    def cpu_count(self) -> int:
        """CPUs the server may run on (its taskset list, else the whole machine's)."""
        if self.cpus:
            return len(parse_cpus(self.cpus))
        return len(os.sched_getaffinity(0))

    def effective_settings(self, extra: Mapping[str, Any] | None = None,
                           intent: Intent | None = None) -> dict[str, Any]:
        """What my.cnf will say: the fragments, the intent in the flavour's dialect (base,
        instance, this start), the instance's settings, this start's, then our private paths."""
        s = configured(self.flavour, {**self.settings, **(extra or {})},
                       self.intent.merge(intent) if self.intent else intent, self.cnf_dir)
        # tmpdir private too: servers bootstrapped at once in a shared /tmp removed each
        # other's "#sql-temptable-…" files (install-db aborted in a two-worker sweep)
        s.update(datadir=str(self.datadir), socket=str(self.socket), port=self.port,
                 bind_address="127.0.0.1", pid_file=str(self.workdir / "server.pid"),
                 log_error=str(self.error_log), tmpdir=str(self._sockdir))
        if os.geteuid() == 0:
            s["user"] = "root"
        needed = self.max_clients + CONNECTION_HEADROOM
        current = int(s.get("max_connections") or DEFAULT_MAX_CONNECTIONS)
        s["max_connections"] = max(current, needed)
        return s

    def write_cnf(self, extra: Mapping[str, Any] | None = None, intent: Intent | None = None) -> str:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._sockdir.mkdir(mode=0o700, exist_ok=True)
        text = render_cnf(self.effective_settings(extra, intent))
        self.cnf_path.write_text(text)
        return text

    def launcher(self, mounts: Iterable[tuple[str, Path, Path]] = ()) -> list[str]:
        """The argv prefix that runs the flavour's programs: nothing for the host's binaries,
        bwrap into the flavour's rootfs (with our directories and `mounts` bound) for a rootfs flavour."""
        return launch.prefix(self.flavour, [self.workdir, self.log_dir, self._sockdir], mounts=mounts)

    def server_argv(self) -> list[str]:
        pin = ["taskset", "-c", self.cpus] if self.cpus else []
        wrapper = self.wrapper or launch.Wrapper(())
        # the wrapper inside the flavour's tree (bwrap, then valgrind, then the server); --defaults-file
        # must be the server's first option, or /etc/mysql is read too
        return [*pin, *self.launcher(wrapper.mounts), *wrapper.argv, self.flavour.server,
                f"--defaults-file={self.cnf_path}"]

    def install_db_argv(self) -> list[str]:
        first, *rest = self.flavour.install_db
        return [*self.launcher(), first, f"--defaults-file={self.cnf_path}", *rest]

    def _bootstrap_sql(self) -> str | None:
        """A MariaDB directory flavour's system tables, created by our own `--bootstrap`
        (the tree's install-db script, if any, expects its own layout): root without a
        password on the socket, no test database. None: the install program does it."""
        files = self.flavour.bootstrap_sql
        if not files:
            return None
        head = "CREATE DATABASE IF NOT EXISTS mysql;\nUSE mysql;\nSET @auth_root_socket=NULL;\n"
        return head + "".join(Path(f).read_text(errors="replace") + "\n" for f in files)

    # -- lifecycle
    def init(self) -> None:
        """Create the datadir (mariadb-install-db)."""
        self.flavour.check_installed()
        self.flavour.provision()
        if self.datadir.exists() and any(self.datadir.iterdir()):
            raise ServerError(f"datadir {self.datadir} exists and is not empty")
        self.write_cnf()
        t0 = time.monotonic()
        sql = self._bootstrap_sql()
        if sql is not None:  # mariadbd --bootstrap works in an existing datadir
            self.datadir.mkdir(parents=True, exist_ok=True)
        try:
            proc.run(self.install_db_argv(), timeout=300, input=sql)
        except proc.ProcError as e:
            log = self.error_log.read_text(errors="replace") if self.error_log.exists() else ""
            errors = [ln for ln in (log + e.output).splitlines() if "[ERROR]" in ln] or [str(e)]
            raise ServerError(f"{self.flavour.install_db[0]} failed for {self.datadir}:\n"
                              + "\n".join(errors[:10])) from e
        self._event("init", t0)

    def start(self, settings: Mapping[str, Any] | None = None, *, intent: Intent | None = None,
              _extra: Mapping[str, Any] | None = None) -> None:
        """Start and wait until it answers. `settings` and `intent` apply to this start only,
        on top of the instance's own: a later start without them does not inherit them."""
        if self.running:
            raise ServerError("server is already running")
        if not (self.datadir / "mysql").exists():
            self.init()
        check_port(self.port)
        self.write_cnf({**(settings or {}), **(_extra or {})}, intent)
        t0 = time.monotonic()
        with open(self.error_log, "ab") as log:
            self._proc = proc.spawn(self.server_argv(), stdout=log, stderr=log, new_session=True)
        _LIVE[id(self)] = self
        try:
            self._wait_ready(t0 + self.ready_timeout)
        except BaseException:
            self.stop(timeout=10)
            raise
        self.version = self.query("SELECT @@version")[0][0]
        self._event("start", t0, settings=dict(settings or {}), extra=dict(_extra or {}),
                    intent=intent.asdict() if intent else {})

    def _wait_ready(self, deadline: float) -> None:
        delay = 0.02
        while True:
            if self._proc.poll() is not None:
                raise ServerDied(f"{self.flavour.server} exited with code {self._proc.returncode} "
                                 f"during start-up\n{self.error_log_tail()}")
            try:
                self.connect(timeout=2).close()
                return
            except Exception as e:  # noqa: BLE001 - not up yet
                last = e
            if time.monotonic() > deadline:
                raise ServerError(f"server not ready after {self.ready_timeout:g} s ({last})\n"
                                  f"{self.error_log_tail()}")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.25)

    def stop(self, timeout: float = 120.0) -> None:
        """SQL SHUTDOWN, then SIGTERM, then SIGKILL, each on a deadline."""
        p = self._proc
        if p is None:
            return
        t0 = time.monotonic()
        if p.poll() is None:
            try:
                with self.connect(timeout=5) as c:
                    c.cmd_query("SHUTDOWN")
            except Exception:  # noqa: BLE001 - fall back to signals
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill(p, grace=10)
        self._proc = None
        _LIVE.pop(id(self), None)
        self._event("stop", t0, returncode=p.returncode)

    def restart(self, settings: Mapping[str, Any] | None = None, *,
                intent: Intent | None = None) -> None:
        """Stop and start; an intent the flavour cannot say is refused before the stop."""
        self.effective_settings(settings, intent)
        self.stop()
        self.start(settings, intent=intent)

    def cold_restart(self, settings: Mapping[str, Any] | None = None, *,
                     intent: Intent | None = None) -> bool:
        """Stop, drop the OS page cache (when permitted), start without buffer-pool reload.

        Returns whether the page cache was dropped (it needs root)."""
        self.effective_settings(settings, intent)
        self.stop()
        dropped = _drop_page_cache()
        self.start(settings, intent=intent, _extra={"innodb_buffer_pool_load_at_startup": "OFF"})
        self.events[-1]["page_cache_dropped"] = dropped
        return dropped

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._sockdir, ignore_errors=True)

    def remove_datadir(self) -> None:
        if self.running:
            raise ServerError("stop the server before removing its datadir")
        shutil.rmtree(self.datadir, ignore_errors=True)

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- state
    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The server's own PID (under bwrap: its child, not bwrap), for CPU sampling."""
        return None if self._proc is None else launch.server_pid(
            self.flavour, self._proc.pid, self.wrapper.comm if self.wrapper else None)

    def query(self, sql: str) -> list[tuple]:
        """As SqlClient's; a connection that fails because the server is gone raises
        ServerDied (with its error log's tail), not the client library's error."""
        try:
            return super().query(sql)
        except Exception as e:
            if getattr(e, "errno", None) in CONNECTION_LOST:
                self.check_alive(during=f"a query ({sql.split(None, 1)[0]})")
            raise

    def check_alive(self, during: str = "the run") -> None:
        """Raise ServerDied (with the error log's tail) if the server is gone."""
        if self._proc is not None and self._proc.poll() is not None:
            code = self._proc.returncode
            self._proc = None
            _LIVE.pop(id(self), None)
            raise ServerDied(f"server {self.flavour.name} died during {during} "
                             f"(exit code {code})\n{self.error_log_tail()}")

    def error_log_tail(self, lines: int = 15) -> str:
        try:
            return "--- server error log (tail) ---\n" + proc.tail(self.error_log.read_text(errors="replace"), lines)
        except OSError:
            return "(no server error log)"

    def _event(self, kind: str, t0: float, **info: Any) -> None:
        self.events.append({"event": kind, "seconds": round(time.monotonic() - t0, 3),
                            "at": time.time(), **info})

    # -- SQL
    def connect(self, timeout: float = 10, **kw: Any):
        import mysql.connector
        return mysql.connector.connect(unix_socket=str(self.socket), user=self.flavour.client_user,
                                       password="", autocommit=True,
                                       connection_timeout=max(1, int(timeout)), **kw)

    def sysbench_connection(self) -> list[str]:
        """sysbench's options to reach this server: its socket and client user."""
        return [f"--mysql-socket={self.socket}", f"--mysql-user={self.flavour.client_user}"]

    def describe(self) -> dict[str, Any]:
        """What a run's metadata records about this server."""
        return {"flavour": self.flavour.name, "family": self.flavour.family,
                "version": self.version, **binary_record(self.flavour), "port": self.port,
                "socket": str(self.socket),
                "pid": self.pid, "cpus": self.cpus, "argv": self.server_argv(),
                "datadir": str(self.datadir), "error_log": str(self.error_log),
                "my_cnf": self.cnf_path.read_text() if self.cnf_path.exists() else None,
                "global_variables": self.variables() if self.running else None,
                "aio": aio_backend(self.error_log.read_text(errors="replace")) if self.error_log.exists() else None}


def configured(flavour: Flavour, settings: Mapping[str, Any] | None = None,
               intent: Intent | None = None, cnf_dir: Path = paths.CNF_DIR) -> dict[str, Any]:
    """The settings a start of `flavour` gets before the driver's own (paths, port,
    max_connections): its cnf fragments, the base intent with `intent` on top in its
    dialect, then `settings`."""
    s: dict[str, Any] = {}
    for name in flavour.cnf:
        s.update(read_cnf(Path(cnf_dir) / name))
    s.update(flavour.start_settings())
    s.update(flavour.settings_for(BASE_INTENT.merge(intent)))
    s.update({norm_key(k): v for k, v in (settings or {}).items()})
    return s


