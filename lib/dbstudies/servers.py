"""Server flavours and private server instances.

A *flavour* (env/servers/<name>.toml) says how to get and run one server version; a
`Server` is a private instance of it: its own datadir, my.cnf, socket and free loopback
port, started and stopped by us. It never touches the system service or port 3306.

Usage (tests/test_server.py runs it for real):

    with Server(load_flavour("mariadb-10.11"), "/tmp/x", max_clients=64) as s:
        s.start()                                   # init on first start
        s.query("SELECT @@version")
        s.restart({"thread_handling": "pool-of-threads"})

Servers are started from the calling thread with PDEATHSIG: if the process that started
them dies, the kernel sends the server SIGTERM, so no mariadbd outlives its Python.
"""
from __future__ import annotations

import atexit
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from . import errors, paths, proc

DEFAULT_MAX_CONNECTIONS = 151
CONNECTION_HEADROOM = 16  # admin, sampler and status connections on top of the clients
FORBIDDEN_PORTS = {3306, 33060}


ServerError = errors.ServerError


class ServerDied(ServerError):
    """The server process exited while we were using it."""


class PortInUse(ServerError):
    pass


# ---------------------------------------------------------------- flavours

@dataclass(frozen=True)
class Flavour:
    """How to get and run one server version (one env/servers/*.toml file)."""
    name: str
    family: str                     # mariadb | mysql
    description: str
    source: str                     # system: the host's binaries; rootfs: a Debian suite's
    server: str                     # path of mariadbd / mysqld (inside the rootfs for rootfs)
    install_db: tuple[str, ...]     # argv; --defaults-file is inserted after argv[0]
    apt: tuple[str, ...] = ()       # system: the host's apt packages (`make setup` installs)
    suite: str = ""                 # rootfs: the Debian suite …
    packages: tuple[str, ...] = ()  # … and the packages installed into the flavour's rootfs
    client_user: str = "root"
    cnf: tuple[str, ...] = ()       # fragments under env/cnf, in order
    thread_pool: bool = False       # has a community thread pool (thread_handling)

    def check_installed(self) -> None:
        """The host's binaries are there (system), or the rootfs is provisioned or can be."""
        if self.source == "rootfs":
            from . import rootfs
            if not rootfs.is_provisioned(self) and rootfs.missing_tools():
                raise ServerError(f"flavour {self.name} runs in its own rootfs and needs "
                                  f"{', '.join(rootfs.missing_tools())} (`make setup` installs them)")
            return
        for binary in (self.server, self.install_db[0]):
            if not Path(binary).exists():
                raise ServerError(f"flavour {self.name}: {binary} is missing; install "
                                  f"{' '.join(self.apt)} (`make setup` does)")

    def provision(self, say=print) -> None:
        """Make the flavour runnable: build/extract its rootfs (a no-op for system)."""
        if self.source == "rootfs":
            from . import rootfs
            rootfs.provision(self, say=say)


_FLAVOUR_TYPES = {"name": str, "family": str, "description": str, "source": str, "apt": list,
                  "suite": str, "packages": list, "server": str, "install_db": list,
                  "client_user": str, "cnf": list, "thread_pool": bool}
_SOURCES = {"system", "rootfs"}


def package_version(flavour: Flavour) -> str | None:
    """The Debian version of the flavour's first package: installed on the host (system) or
    in its provisioned rootfs; None when not installed or provisioned."""
    pkg = (flavour.apt or flavour.packages or ("",))[0]
    if flavour.source == "rootfs":
        from . import rootfs
        status = rootfs.tree(flavour) / "var/lib/dpkg/status"
        if not rootfs.is_provisioned(flavour) or not status.exists():
            return None
        for block in status.read_text(errors="replace").split("\n\n"):
            if re.search(rf"(?m)^Package: {re.escape(pkg)}$", block):
                m = re.search(r"(?m)^Version: (\S+)$", block)
                return m.group(1) if m else None
        return None
    p = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True)
    return p.stdout.strip() or None if p.returncode == 0 else None


_PREFIXES = ("loose_", "skip_", "enable_", "disable_", "maximum_")


_OPTIONS: dict[Flavour, frozenset[str]] = {}


def known_options(flavour: Flavour) -> frozenset[str] | None:
    """The option names the flavour's server accepts (`--verbose --help`, underscores), or
    None when that cannot be asked yet (a rootfs flavour not provisioned). Kept once known."""
    if flavour not in _OPTIONS:
        names = _ask_options(flavour)
        if not names:
            return None
        _OPTIONS[flavour] = names
    return _OPTIONS[flavour]


def _ask_options(flavour: Flavour) -> frozenset[str]:
    launcher: list[str] = []
    if flavour.source == "rootfs":
        from . import rootfs
        if not rootfs.is_provisioned(flavour):
            return frozenset()
        launcher = rootfs.launch_prefix(flavour, [])
    elif not Path(flavour.server).exists():
        return frozenset()
    p = subprocess.run([*launcher, flavour.server, "--no-defaults", "--verbose", "--help",
                        "--user=root"], capture_output=True, text=True, timeout=60)
    names = {norm_key(o) for o in re.findall(r"(?m)^\s+(?:-\w, )?--([a-z0-9][a-z0-9_-]*)", p.stdout)}
    table = False  # then the variables table, which also lists options the text does not
    for line in p.stdout.splitlines():
        if line.startswith("Variables (--variable-name=value)"):
            table = True
        elif table and line and not line.startswith(("-", "and boolean")):
            names.add(norm_key(line.split()[0]))
    return frozenset(names)


def unknown_settings(flavour: Flavour, names: Iterable[str]) -> list[str]:
    """The setting names the flavour's server does not know (`loose_…` never counts)."""
    known = known_options(flavour)
    if known is None:
        return []
    unknown = []
    for name in map(norm_key, names):
        bare = next((name[len(p):] for p in _PREFIXES if name.startswith(p)), name)
        if not name.startswith("loose_") and name not in known and bare not in known:
            unknown.append(name)
    return unknown


def disk_use(flavour: Flavour) -> int:
    """Bytes the flavour's rootfs (tarball + tree) takes; 0 for the host's binaries."""
    if flavour.source != "rootfs":
        return 0
    from . import rootfs
    return rootfs.disk_usage(flavour)


def list_flavours(servers_dir: Path = paths.SERVERS_DIR) -> list[str]:
    return sorted(p.stem for p in Path(servers_dir).glob("*.toml"))


def load_flavour(name: str, servers_dir: Path = paths.SERVERS_DIR) -> Flavour:
    """Read and validate env/servers/<name>.toml."""
    path = Path(servers_dir) / f"{name}.toml"
    if not path.exists():
        raise ValueError(f"unknown server flavour {name!r}; known: {', '.join(list_flavours(servers_dir))}")
    data = tomllib.loads(path.read_text())
    unknown = set(data) - set(_FLAVOUR_TYPES)
    missing = {"name", "family", "description", "source", "server", "install_db"} - set(data)
    if unknown or missing:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
    for key, value in data.items():
        if not isinstance(value, _FLAVOUR_TYPES[key]):
            raise ValueError(f"{path}: {key} must be a {_FLAVOUR_TYPES[key].__name__}")
    if data["name"] != name or data["source"] not in _SOURCES:
        raise ValueError(f"{path}: name must be {name!r} and source one of {sorted(_SOURCES)}")
    if data["source"] == "rootfs" and not (data.get("suite") and data.get("packages")):
        raise ValueError(f"{path}: a rootfs flavour needs a suite and its packages")
    for key in ("apt", "packages", "install_db", "cnf"):
        if key in data:
            data[key] = tuple(data[key])
    return Flavour(**data)


# ---------------------------------------------------------------- my.cnf

def norm_key(key: str) -> str:
    """my.cnf option names: dashes and underscores are the same; we write underscores."""
    return key.strip().replace("-", "_")


def read_cnf(path: Path) -> dict[str, Any]:
    """Settings of a [mysqld] fragment; a bare key maps to None, a repeated key to a list."""
    out: dict[str, Any] = {}
    for n, raw in enumerate(Path(path).read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith(";"):
            continue
        if line.startswith("["):
            if line not in ("[mysqld]", "[mariadbd]", "[server]"):
                raise ValueError(f"{path}:{n}: only a [mysqld] section is allowed in fragments")
            continue
        key, _, value = line.partition("=")
        key, value = norm_key(key), (value.strip() if _ else None)
        if key in out:
            prev = out[key]
            out[key] = (prev if isinstance(prev, list) else [prev]) + [value]
        else:
            out[key] = value
    return out


def render_cnf(settings: Mapping[str, Any]) -> str:
    """A [mysqld] section; None → bare option, list → the option repeated, bool → ON/OFF."""
    lines = ["[mysqld]"]
    for key, value in settings.items():
        for v in value if isinstance(value, list) else [value]:
            if v is None:
                lines.append(key)
            elif isinstance(v, bool):
                lines.append(f"{key}={'ON' if v else 'OFF'}")
            else:
                lines.append(f"{key}={v}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- ports

def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_port(port: int) -> None:
    """Refuse port 3306 (the system server's), and any port something already listens on."""
    if port in FORBIDDEN_PORTS:
        raise PortInUse(f"port {port} is reserved for the system server; dbstudies never uses it")
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            raise PortInUse(f"port {port} on 127.0.0.1 is in use ({e.strerror}); "
                            f"choose another or let dbstudies pick a free one") from None


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


@dataclass
class Server:
    """A private server instance. Use as a context manager: it is always stopped on exit.

    `settings` override the flavour's cnf fragments at every start (a start's own settings
    go on top, for that start only); `max_clients` raises max_connections to
    cover that many client connections; `cpus` pins the server (taskset list, e.g. "0-3").
    """
    flavour: Flavour
    workdir: Path
    settings: dict[str, Any] = field(default_factory=dict)
    port: int | None = None
    max_clients: int = 0
    cpus: str | None = None
    log_dir: Path | None = None
    ready_timeout: float = 120.0
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

    def effective_settings(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Fragments, then our private paths, then overrides: what my.cnf will say."""
        s: dict[str, Any] = {}
        for name in self.flavour.cnf:
            s.update(read_cnf(Path(self.cnf_dir) / name))
        s.update({norm_key(k): v for k, v in self.settings.items()})
        s.update({norm_key(k): v for k, v in (extra or {}).items()})
        s.update(datadir=str(self.datadir), socket=str(self.socket), port=self.port,
                 bind_address="127.0.0.1", pid_file=str(self.workdir / "server.pid"),
                 log_error=str(self.error_log))
        if os.geteuid() == 0:
            s["user"] = "root"
        needed = self.max_clients + CONNECTION_HEADROOM
        current = int(s.get("max_connections") or DEFAULT_MAX_CONNECTIONS)
        s["max_connections"] = max(current, needed)
        return s

    def write_cnf(self, extra: Mapping[str, Any] | None = None) -> str:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._sockdir.mkdir(mode=0o700, exist_ok=True)
        text = render_cnf(self.effective_settings(extra))
        self.cnf_path.write_text(text)
        return text

    def launcher(self) -> list[str]:
        """The argv prefix that runs the flavour's programs: nothing for the host's binaries,
        bwrap into the flavour's rootfs (with our directories bound) for a rootfs flavour."""
        if self.flavour.source != "rootfs":
            return []
        from . import rootfs
        return rootfs.launch_prefix(self.flavour, [self.workdir, self.log_dir, self._sockdir])

    def server_argv(self) -> list[str]:
        pin = ["taskset", "-c", self.cpus] if self.cpus else []
        # --defaults-file must be the first option, or /etc/mysql is read too
        return [*pin, *self.launcher(), self.flavour.server, f"--defaults-file={self.cnf_path}"]

    def install_db_argv(self) -> list[str]:
        first, *rest = self.flavour.install_db
        return [*self.launcher(), first, f"--defaults-file={self.cnf_path}", *rest]

    # -- lifecycle
    def init(self) -> None:
        """Create the datadir (mariadb-install-db)."""
        self.flavour.check_installed()
        self.flavour.provision()
        if self.datadir.exists() and any(self.datadir.iterdir()):
            raise ServerError(f"datadir {self.datadir} exists and is not empty")
        self.write_cnf()
        t0 = time.monotonic()
        try:
            proc.run(self.install_db_argv(), timeout=300)
        except proc.ProcError as e:
            log = self.error_log.read_text(errors="replace") if self.error_log.exists() else ""
            errors = [ln for ln in (log + e.output).splitlines() if "[ERROR]" in ln] or [str(e)]
            raise ServerError(f"{self.flavour.install_db[0]} failed for {self.datadir}:\n"
                              + "\n".join(errors[:10])) from e
        self._event("init", t0)

    def start(self, settings: Mapping[str, Any] | None = None, *,
              _extra: Mapping[str, Any] | None = None) -> None:
        """Start and wait until it answers. `settings` apply to this start only, on top of
        the instance's own: a later start without them does not inherit them."""
        if self.running:
            raise ServerError("server is already running")
        if not (self.datadir / "mysql").exists():
            self.init()
        check_port(self.port)
        self.write_cnf({**(settings or {}), **(_extra or {})})
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
        self._event("start", t0, settings=dict(settings or {}), extra=dict(_extra or {}))

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

    def restart(self, settings: Mapping[str, Any] | None = None) -> None:
        self.stop()
        self.start(settings)

    def cold_restart(self, settings: Mapping[str, Any] | None = None) -> bool:
        """Stop, drop the OS page cache (when permitted), start without buffer-pool reload.

        Returns whether the page cache was dropped (it needs root)."""
        self.stop()
        dropped = _drop_page_cache()
        self.start(settings, _extra={"innodb_buffer_pool_load_at_startup": "OFF"})
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
        if self._proc is None:
            return None
        if self.flavour.source != "rootfs":
            return self._proc.pid
        return _descendant(self._proc.pid, Path(self.flavour.server).name) or self._proc.pid

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

    def query(self, sql: str) -> list[tuple]:
        with self.connect() as c:
            cur = c.cursor()
            cur.execute(sql)
            rows = cur.fetchall() if cur.with_rows else []
            cur.close()
            return rows

    def variables(self) -> dict[str, str]:
        return dict(self.query("SHOW GLOBAL VARIABLES"))

    def describe(self) -> dict[str, Any]:
        """What a run's metadata records about this server."""
        return {"flavour": self.flavour.name, "family": self.flavour.family,
                "version": self.version, "port": self.port, "socket": str(self.socket),
                "pid": self.pid, "cpus": self.cpus, "argv": self.server_argv(),
                "datadir": str(self.datadir), "error_log": str(self.error_log),
                "my_cnf": self.cnf_path.read_text() if self.cnf_path.exists() else None,
                "global_variables": self.variables() if self.running else None}


def _descendant(pid: int, name: str) -> int | None:
    """The first process below `pid` whose command name is `name` (breadth first)."""
    todo = [pid]
    while todo:
        p = todo.pop(0)
        try:
            comm = Path(f"/proc/{p}/comm").read_text().strip()
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        if p != pid and comm == name[:15]:
            return p
        todo += [int(c) for c in children]
    return None


def parse_cpus(spec: str) -> list[int]:
    """Parse a taskset CPU list: "0", "0-3", "0,2-3" → sorted CPU numbers.

    >>> parse_cpus("0,2-3")
    [0, 2, 3]
    """
    cpus: set[int] = set()
    for part in str(spec).split(","):
        m = re.fullmatch(r"\s*(\d+)(?:-(\d+))?\s*", part)
        if not m:
            raise ValueError(f"bad CPU list {spec!r} (expected e.g. '0', '0-3' or '0,2-3')")
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        if b < a:
            raise ValueError(f"bad CPU range {part!r} in {spec!r}")
        cpus.update(range(a, b + 1))
    return sorted(cpus)
