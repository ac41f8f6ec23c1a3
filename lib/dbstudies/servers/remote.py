"""A server dbstudies does not start: a `remote` flavour names its host, port and user, and
where the password comes from — an environment variable (`password_env`) or a MySQL option
file (`option_file`, its [client] section). It is never written anywhere dbstudies writes:
not into metadata, reports or logs, and not into argv. sysbench reads it from an option file
of its own (`--config-file`, mode 0600 in a private directory) that is removed when the run
is done.

A remote server cannot be restarted or reconfigured by us: a start or restart that asks for
settings or an intent raises `Unavailable`, and studies refuse such arms before measuring
(`checks.remote_problems`). Every block therefore measures the server as it is, without a
fresh start between blocks; sampling, intervals, statistics and the report work unchanged
(no server CPU or process I/O: that process is not ours to read).

    # env/servers/prod-replica.toml, or any file given as `-p flavour path/to/it.toml`
    name = "prod-replica"
    family = "mariadb"
    description = "the staging replica"
    source = "remote"
    host = "10.0.0.7"
    port = 3306
    client_user = "bench"
    password_env = "BENCH_PASSWORD"
"""
from __future__ import annotations

import configparser
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

from ..core import proc
from ..core.errors import ServerError
from .cnf import Intent
from .dialect import Unavailable
from .flavour import Flavour
from .instance import SqlClient


def password(flavour: Flavour) -> str:
    """The remote flavour's password, from its environment variable or option file."""
    if flavour.password_env:
        if flavour.password_env not in os.environ:
            raise ServerError(f"flavour {flavour.name}: the environment variable "
                              f"{flavour.password_env} (its password) is not set")
        return os.environ[flavour.password_env]
    if flavour.option_file:
        parser = configparser.ConfigParser(allow_no_value=True, interpolation=None, strict=False)
        try:
            parser.read_string(Path(flavour.option_file).expanduser().read_text())
        except (OSError, configparser.Error) as e:
            raise ServerError(f"flavour {flavour.name}: cannot read its option file "
                              f"{flavour.option_file} ({type(e).__name__})") from None
        value = parser.get("client", "password", fallback="") or ""
        return value.strip().strip("'\"")
    return ""


def check_reachable(flavour: Flavour) -> None:
    """The remote server answers `SELECT 1` as its client user (a `ServerError` saying why
    not — never its password)."""
    try:
        RemoteServer(flavour, Path("."), password=password(flavour)).query("SELECT 1")
    except ServerError:
        raise
    except Exception as e:  # noqa: BLE001 - unreachable, refused: never the password
        raise ServerError(f"remote flavour {flavour.name}: {flavour.host}:{flavour.port} does not "
                          f"answer as {flavour.client_user} ({type(e).__name__}: "
                          f"{getattr(e, 'msg', '') or 'no connection'})") from None


def _asks(settings: Mapping[str, Any] | None, intent: Intent | None) -> bool:
    return bool(settings) or bool(intent and intent.asdict())


class RemoteServer(SqlClient):
    """A running server somewhere else, used through the same calls as `Server`; the
    constructor takes (and ignores) what only a private server uses."""

    def __init__(self, flavour: Flavour, workdir: Path, *, password: str,
                 settings: Mapping[str, Any] | None = None, log_dir: Path | None = None, **_: Any):
        if settings:
            raise Unavailable(f"{flavour.name} is a remote server: dbstudies cannot apply "
                              f"settings {sorted(settings)} to it")
        self.flavour = flavour
        self.workdir = Path(workdir)
        self.port = flavour.port
        self.socket = None
        self.datadir = None
        self.pid = None
        self.cpus = None
        self.version: str | None = None
        self.events: list[dict[str, Any]] = []
        self._secret_dir: Path | None = None
        self._password = password  # read once, where the server is made (`factory.instance`)

    # -- lifecycle: nothing to start or stop, nothing to reconfigure
    def start(self, settings: Mapping[str, Any] | None = None, *, intent: Intent | None = None,
              **_: Any) -> None:
        if _asks(settings, intent):
            raise Unavailable(f"{self.flavour.name} is a remote server: dbstudies cannot "
                              "restart or reconfigure it")
        t0 = time.monotonic()
        self.version = self.query("SELECT @@version")[0][0]
        # on this machine (loopback), its process is known: the probes then count its CPU
        # and I/O as the server's, not as other load that marks every step busy
        self.pid = proc.listening_pid(self.flavour.host, self.port)
        self.events.append({"event": "attach", "seconds": round(time.monotonic() - t0, 3),
                            "at": time.time()})

    def restart(self, settings: Mapping[str, Any] | None = None, *,
                intent: Intent | None = None) -> None:
        """A remote server is not restarted: the next block measures it as it is."""
        self.start(settings, intent=intent)

    def cold_restart(self, *args: Any, **kw: Any) -> bool:
        raise Unavailable(f"{self.flavour.name} is a remote server: dbstudies cannot restart it cold")

    def stop(self, timeout: float = 0) -> None:
        """Nothing to stop; sysbench's option file (the password) is removed."""
        if self._secret_dir is not None:
            shutil.rmtree(self._secret_dir, ignore_errors=True)
            self._secret_dir = None

    close = stop

    def remove_datadir(self) -> None:
        pass

    def __enter__(self) -> "RemoteServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self.version is not None

    def check_alive(self, during: str = "the run") -> None:
        try:
            self.query("SELECT 1")
        except Exception as e:  # noqa: BLE001 - say what failed, never the credentials
            raise ServerError(f"remote server {self.flavour.name} did not answer during {during} "
                              f"({type(e).__name__})") from None

    def error_log_tail(self, lines: int = 15) -> str:
        return "(a remote server: its error log is not ours to read)"

    # -- SQL
    def connect(self, timeout: float = 10, **kw: Any):
        import mysql.connector
        return mysql.connector.connect(host=self.flavour.host, port=self.flavour.port,
                                       user=self.flavour.client_user, password=self._password,
                                       autocommit=True, connection_timeout=max(1, int(timeout)), **kw)

    def sysbench_connection(self) -> list[str]:
        """sysbench's connection options: one option file (mode 0600, private directory)
        holding host, port, user and password; removed by `stop`."""
        if self._secret_dir is None:
            self._secret_dir = Path(tempfile.mkdtemp(prefix="dbs-remote-"))
            f = self._secret_dir / "sysbench.cfg"
            fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(f"mysql-host={self.flavour.host}\nmysql-port={self.flavour.port}\n"
                          f"mysql-user={self.flavour.client_user}\n"
                          f"mysql-password={self._password}\n")
        return [f"--config-file={self._secret_dir / 'sysbench.cfg'}"]

    def describe(self) -> dict[str, Any]:
        """What a run's metadata records about this server (never its password)."""
        return {"flavour": self.flavour.name, "family": self.flavour.family, "remote": True,
                "version": self.version, "host": self.flavour.host, "port": self.flavour.port,
                "pid": self.pid, "user": self.flavour.client_user,
                "password_from": (f"environment variable {self.flavour.password_env}"
                                  if self.flavour.password_env else
                                  f"option file {self.flavour.option_file}"
                                  if self.flavour.option_file else "none"),
                "global_variables": self.variables() if self.running else None}
