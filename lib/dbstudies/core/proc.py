"""The one subprocess wrapper: argv lists only, a timeout, kill on any exception.

>>> run(["echo", "hi"]).stdout
'hi\\n'
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import psutil

from . import errors

TAIL_LINES = 30


def tail(text: str | bytes | None, lines: int = TAIL_LINES) -> str:
    """The last `lines` lines of a process's output, decoded leniently."""
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return "\n".join(text.rstrip().splitlines()[-lines:])


class ProcError(errors.ProcError):
    """A command failed (non-zero exit, timeout or signal); carries argv and output tails."""

    def __init__(self, argv: Sequence[str], returncode: int | None, stdout: str = "",
                 stderr: str = "", reason: str = ""):
        self.argv = list(argv)
        self.returncode = returncode
        self.output = f"{stdout or ''}\n{stderr or ''}"  # full text, for callers that search it
        self.stdout_tail = tail(stdout)
        self.stderr_tail = tail(stderr)
        what = reason or f"exited with code {returncode}"
        msg = f"command {what}: {' '.join(self.argv)}"
        if self.stderr_tail:
            msg += f"\n--- stderr (tail) ---\n{self.stderr_tail}"
        elif self.stdout_tail:
            msg += f"\n--- stdout (tail) ---\n{self.stdout_tail}"
        super().__init__(msg)


_PR_SET_PDEATHSIG = 1


def _child_setup() -> None:  # pragma: no cover - runs in the child
    """In the child before exec: die with the parent (SIGTERM via PDEATHSIG, Linux) and lift
    the soft open-files limit to the hard one (sysbench needs a socket per thread: 4096
    threads fail under Debian's default soft limit of 1024)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def find_processes(marker: str) -> list[int]:
    """PIDs of live (non-zombie) processes, other than this one, whose command line
    contains `marker` — e.g. a run directory, to find a server that outlived its run."""
    out = []
    for p in psutil.process_iter(["pid", "cmdline", "status"]):
        cmd = " ".join(p.info["cmdline"] or ())
        if p.pid != os.getpid() and marker in cmd and p.info["status"] != psutil.STATUS_ZOMBIE:
            out.append(p.pid)
    return out


def alive(pid: int) -> bool:
    """Whether a process `pid` exists (a zombie counts as gone)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def listening_pid(host: str, port: int) -> int | None:
    """The PID of the process listening on `host`:`port` when that is this machine (a
    loopback address) and the process can be seen; else None (a server elsewhere).

    >>> listening_pid("db.example.org", 3306) is None
    True
    """
    if host not in LOOPBACK:
        return None
    try:
        conns = psutil.net_connections(kind="tcp")
    except psutil.AccessDenied:  # another user's sockets: not ours to see
        return None
    pids = {c.pid for c in conns if c.status == psutil.CONN_LISTEN and c.laddr
            and c.laddr.port == port and c.pid is not None}
    return pids.pop() if len(pids) == 1 else None


def kill_pids(pids: Sequence[int], grace: float = 30.0) -> None:
    """SIGTERM to processes that are not our children (a server a dead run left behind),
    then SIGKILL to those still alive after `grace` seconds; waits until they are gone."""
    procs = []
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            procs.append(psutil.Process(pid))
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.terminate()
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(alive, timeout=grace)


@dataclass(frozen=True)
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


def spawn(argv: Sequence[str], *, stdout=None, stderr=None, stdin=subprocess.DEVNULL,
          env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
          new_session: bool = False) -> subprocess.Popen:
    """Start a long-running child that dies with us (PDEATHSIG) — servers, sysbench, the
    stages of a pipeline (`stdin`: the previous stage's stdout)."""
    full_env = None if env is None else {**os.environ, **env}
    return subprocess.Popen([str(a) for a in argv], stdout=stdout, stderr=stderr, env=full_env,
                            cwd=cwd, stdin=stdin, start_new_session=new_session,
                            preexec_fn=_child_setup)


def call(argv: Sequence[str], *, env: Mapping[str, str] | None = None,
         cwd: str | Path | None = None) -> int:
    """Run a command in the foreground with this terminal (a Dask scheduler or worker) until
    it exits; its exit code. Ctrl-C or any error here ends it too (`kill`)."""
    p = spawn(argv, stdin=None, env=env, cwd=cwd)
    try:
        return p.wait()
    except BaseException:
        kill(p)
        raise


def kill(p: subprocess.Popen, grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; always reaps the child."""
    if p.poll() is not None:
        return
    p.terminate()
    try:
        p.wait(grace)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def run(argv: Sequence[str], *, timeout: float = 600, check: bool = True,
        env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
        input: str | None = None) -> Result:
    """Run a command to completion; raise ProcError on failure or timeout.

    The child is killed if anything (timeout, KeyboardInterrupt) interrupts the wait.
    """
    argv = [str(a) for a in argv]
    full_env = None if env is None else {**os.environ, **env}
    try:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env,
                             cwd=cwd, text=True, errors="replace",
                             stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                             preexec_fn=_child_setup)
    except FileNotFoundError as e:
        raise ProcError(argv, None, reason=f"could not start ({e.strerror})") from e
    try:
        out, err = p.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(p)
        out, err = p.communicate()
        raise ProcError(argv, None, out, err, reason=f"timed out after {timeout:g} s") from None
    except BaseException:
        kill(p)
        raise
    if check and p.returncode != 0:
        raise ProcError(argv, p.returncode, out, err)
    return Result(argv, p.returncode, out, err)
