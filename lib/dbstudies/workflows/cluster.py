"""Who may join a sweep's Dask cluster: the scheduler, its benchmark hosts and the clients that
submit runs all present a certificate signed by the project's own certificate authority, over
TLS, or are refused (Dask's mutual TLS, `distributed.Security`). A `dbstudies worker` runs
whatever task it is given, as the user that started it (root on a benchmark host): without
this, anyone who could reach port 8786 could run code there.

The credentials live in one folder (`data/tls/` by default, mode 0700, every file 0600):
`ca.pem` (the authority's certificate), `ca.key` (its key: it never leaves the scheduler's
machine) and `member.pem` (one certificate and key that every member of the cluster shows).
`dbstudies scheduler` makes them once; a benchmark host and a client need copies of `ca.pem`
and `member.pem` in the same folder of their own checkout.

A plain `tcp://` address (unencrypted, unauthenticated) is refused, except on the loopback
with `--insecure`, for tests and a single machine.
"""
from __future__ import annotations

import ipaddress
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..core import paths, proc
from ..core.errors import ParamError

TLS_DIR = paths.DATA_DIR / "tls"
CA, CA_KEY, MEMBER = "ca.pem", "ca.key", "member.pem"
SHARED = (CA, MEMBER)             # what a benchmark host or a client needs
DAYS = 3650                       # the certificates' life: a cluster's, not a session's
DASHBOARD = "127.0.0.1:8787"      # Dask's dashboard (no authentication): this machine only, unless asked
SCHEMES = ("tls", "tcp")


@dataclass(frozen=True)
class Access:
    """How to reach a scheduler: its address and the credentials folder (None: plain TCP on the
    loopback, asked for with `--insecure`)."""
    address: str
    tls_dir: Path | None

    def security(self) -> Any:
        """The `distributed.Security` a client, worker or scheduler of this cluster uses: mutual
        TLS with the member certificate, encryption required (None on the insecure loopback)."""
        if self.tls_dir is None:
            return None
        from distributed import Security
        ca, member = str(self.tls_dir / CA), str(self.tls_dir / MEMBER)
        return Security(require_encryption=True, tls_ca_file=ca, tls_client_cert=member,
                        tls_scheduler_cert=member, tls_worker_cert=member)

    def tls_argv(self) -> list[str]:
        """The `dask scheduler` / `dask worker` options that give it the member certificate."""
        if self.tls_dir is None:
            return []
        member = str(self.tls_dir / MEMBER)
        return ["--tls-ca-file", str(self.tls_dir / CA), "--tls-cert", member, "--tls-key", member]

    def env(self) -> dict[str, str]:
        """Environment for a scheduler or worker process: encryption required on every comm."""
        return {} if self.tls_dir is None else {"DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True"}


def loopback(host: str) -> bool:
    """Whether `host` is this machine's loopback.

    >>> [loopback(h) for h in ("127.0.0.1", "127.3.4.5", "::1", "localhost", "10.0.0.1", "bench1", "")]
    [True, True, True, True, False, False, False]
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def access(address: str | None, *, tls_dir: Path | None = None, insecure: bool = False) -> Access | None:
    """The checked way to reach the scheduler at `address` (None: no scheduler named, none):
    `tls://HOST:PORT` (a bare `HOST:PORT` is taken as TLS) with the credentials in `tls_dir`
    (default `data/tls/`);
    `tcp://` only on the loopback and only with `insecure`. One line each, before anything runs.

    >>> access("tcp://127.0.0.1:8786", insecure=True)
    Access(address='tcp://127.0.0.1:8786', tls_dir=None)
    >>> access("tcp://10.1.2.3:8786", insecure=True)
    Traceback (most recent call last):
    ...
    dbstudies.core.errors.ParamError: invalid parameters:
      - tcp://10.1.2.3:8786 is plain TCP (no encryption, no authentication): only the loopback may use it, with --insecure; use tls:// (`dbstudies scheduler` prints its address)
    """
    if address is None:
        return None
    parts = urlsplit(address if "://" in address else f"tls://{address}")
    if parts.scheme not in SCHEMES or not parts.hostname or parts.port is None:
        raise ParamError([f"{address}: a scheduler's address is tls://HOST:PORT"])
    url = f"{parts.scheme}://{parts.netloc}"
    if parts.scheme == "tcp":
        if not (insecure and loopback(parts.hostname)):
            raise ParamError([f"{url} is plain TCP (no encryption, no authentication): only the loopback "
                              "may use it, with --insecure; use tls:// (`dbstudies scheduler` prints its address)"])
        return Access(url, None)
    if insecure:
        raise ParamError([f"{url}: --insecure is for a tcp:// address on the loopback"])
    return Access(url, credentials(tls_dir or TLS_DIR))


def serving(port: int, host: str, *, tls_dir: Path | None = None, insecure: bool = False) -> Access:
    """How `dbstudies scheduler` serves on `host:port` ('' = every interface): over TLS with the
    credentials made in `tls_dir` (once), or with `insecure` plain TCP on a loopback address only."""
    if insecure:
        host = host or "127.0.0.1"
        if not loopback(host):
            raise ParamError([f"--insecure serves plain TCP on the loopback only, not on {host!r}"])
        return Access(f"tcp://{host}:{port}", None)
    return Access(f"tls://{host or '0.0.0.0'}:{port}", ensure(tls_dir or TLS_DIR))


def credentials(folder: Path) -> Path:
    """`folder` if it holds what a member of the cluster shows (`ca.pem`, `member.pem`), else a
    one-line error that says where they come from."""
    missing = [name for name in SHARED if not (folder / name).is_file()]
    if missing:
        raise ParamError([f"no {' or '.join(missing)} in {folder}: `dbstudies scheduler` makes them on its "
                          f"machine; copy {CA} and {MEMBER} from its {folder.name}/ folder to this one (mode 0600)"])
    return folder


def ensure(folder: Path) -> Path:
    """Make the cluster's authority and member certificate in `folder` once (openssl; the
    folder 0700, every file 0600); kept as they are when they exist."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    ca, ca_key, member = folder / CA, folder / CA_KEY, folder / MEMBER
    if not (ca.exists() and ca_key.exists()):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", str(DAYS), "-subj",
                 "/CN=dbstudies cluster authority", "-keyout", str(ca_key), "-out", str(ca))
        member.unlink(missing_ok=True)  # signed by an authority that is gone
    if not member.exists():
        key, request, cert = folder / "member.key", folder / "member.csr", folder / "member.crt"
        try:
            _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=dbstudies member",
                     "-keyout", str(key), "-out", str(request))
            _openssl("x509", "-req", "-in", str(request), "-CA", str(ca), "-CAkey", str(ca_key),
                     "-CAcreateserial", "-days", str(DAYS), "-out", str(cert))
            member.write_text(cert.read_text() + key.read_text())
        finally:
            for f in (key, request, cert, folder / "ca.srl"):
                f.unlink(missing_ok=True)
    for f in (ca, ca_key, member):
        os.chmod(f, 0o600)
    return folder


def _openssl(*args: str) -> None:
    proc.run(["openssl", *args], timeout=60)


def scheduler_argv(way: Access, dashboard: str) -> list[str]:
    """`dask scheduler` listening where `way` says, with its credentials, its dashboard at
    `dashboard` (run it with allowed-failures 0: a run a dead worker abandoned is reported, not
    run again elsewhere)."""
    where = urlsplit(way.address)
    return [sys.executable, "-m", "distributed.cli.dask_scheduler", "--protocol", where.scheme,
            "--host", str(where.hostname), "--port", str(where.port), "--dashboard-address", dashboard,
            *way.tls_argv()]


def worker_argv(way: Access, local_directory: Path, name: str, nthreads: int = 1) -> list[str]:
    """`dask worker` as a benchmark host of `way`'s scheduler: one process, one task slot,
    resource bench=1, no automatic restarts of tasks elsewhere (the scheduler's allowed-failures
    is its own); on the insecure loopback it listens there too."""
    return [sys.executable, "-m", "distributed.cli.dask_worker", way.address, "--nworkers", "1",
            "--nthreads", str(nthreads), "--resources", "bench=1", "--local-directory",
            str(local_directory), "--name", name, "--no-dashboard",
            *(["--host", urlsplit(way.address).hostname] if way.tls_dir is None else []), *way.tls_argv()]


def listening(way: Access, dashboard: str) -> str:
    """What `dbstudies scheduler` says before it starts: where it listens, who may connect, what
    a benchmark host needs.

    >>> print(listening(Access("tcp://127.0.0.1:8786", None), DASHBOARD))
    scheduler: tcp://127.0.0.1:8786 — plain TCP on the loopback (--insecure): no encryption, no authentication
    dashboard: 127.0.0.1:8787 (served only where bokeh is installed; it has no authentication)
    a worker on this machine: dbstudies worker tcp://127.0.0.1:8786 --insecure
    """
    where = urlsplit(way.address)
    if way.tls_dir is None:
        head = f"scheduler: {way.address} — plain TCP on the loopback (--insecure): no encryption, no authentication"
        join = f"a worker on this machine: dbstudies worker {way.address} --insecure"
    else:
        on = "every interface" if where.hostname == "0.0.0.0" else where.hostname
        head = (f"scheduler: {way.address} ({on}, port {where.port}) — TLS; only members with a certificate "
                f"of its authority ({way.tls_dir / CA}) may connect")
        join = (f"a benchmark host (or a client) needs {CA} and {MEMBER} copied from {way.tls_dir}/ into the same "
                f"folder of its checkout (mode 0600), then: dbstudies worker tls://THIS-HOST:{where.port}")
    return "\n".join([head, f"dashboard: {dashboard} (served only where bokeh is installed; it has no authentication)",
                      join])


def serve(port: int, host: str, dashboard: str | None, *, tls_dir: Path | None = None, insecure: bool = False) -> int:
    """`dbstudies scheduler`: say where it listens and who may join, then run Dask's scheduler
    (allowed-failures 0) until it ends."""
    way = serving(port, host, tls_dir=tls_dir, insecure=insecure)
    print(listening(way, dashboard or DASHBOARD), flush=True)
    return proc.call(scheduler_argv(way, dashboard or DASHBOARD),
                     env={"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0", **way.env()})


def join(way: Access, local_directory: Path, name: str | None = None) -> int:
    """`dbstudies worker`: this machine a benchmark host of `way`'s scheduler until it ends."""
    local_directory.mkdir(parents=True, exist_ok=True)
    return proc.call(worker_argv(way, local_directory.resolve(), name or platform.node()),
                     env=way.env(), cwd=paths.REPO)
