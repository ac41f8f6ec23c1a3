"""Commands and processes in the tests: a command run to its end with its output in files
(`run_logged`: no pipe a process left behind can hold, and where it hangs it says where), a
wait on a state, never on time (`wait_for`), and the processes that mention a path
(`processes_mentioning`: what a test must leave none of)."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from dbstudies.core import proc

processes_mentioning = proc.find_processes


def run_logged(argv: list[str], where: Path, timeout: float, **kw) -> subprocess.CompletedProcess:
    """Run a command line to its end with its output in files under `where` (never pipes: a
    process it leaves behind cannot hold the test), stdin closed. Past `timeout` it fails with
    what a reader needs to find the hang: the command's Python stacks (`dbstudies` dumps them
    on SIGUSR1), every process it started, the tail of its output and of each kernel.log and
    progress.json under `where`."""
    import psutil
    where.mkdir(parents=True, exist_ok=True)
    out, err = where / "stdout.txt", where / "stderr.txt"
    with open(out, "w") as o, open(err, "w") as e:
        p = subprocess.Popen(argv, stdout=o, stderr=e, stdin=subprocess.DEVNULL, start_new_session=True, **kw)
        try:
            code = p.wait(timeout)
        except subprocess.TimeoutExpired:
            tree = {}  # pid → command line, of what is still running
            with contextlib.suppress(psutil.Error):
                for q in [psutil.Process(p.pid), *psutil.Process(p.pid).children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        tree[q.pid] = " ".join(q.cmdline())
            listing = "\n".join(f"{pid} {cmd[:200]}" for pid, cmd in tree.items())
            def written() -> int:  # its stderr: the terminal's, or a run's kernel.log while a notebook executes
                return sum(f.stat().st_size for f in [err, *where.rglob("kernel.log")])
            before = written()
            for pid, cmd in tree.items():  # the command and its kernel dump their stacks
                if "dbstudies" in cmd or "ipykernel" in cmd:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGUSR1)
            with contextlib.suppress(AssertionError):  # the dump's first bytes, or nothing to show
                wait_for(lambda: written() > before, 5, "a stack dump")
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            logs = "".join(f"\n--- {f}\n{f.read_text(errors='replace')[-10000:]}"
                           for f in sorted([*where.rglob("kernel.log"), *where.rglob("progress.json")]))
            pytest.fail(f"{' '.join(map(str, argv))} still running after {timeout:.0f} s\n--- processes\n{listing}\n"
                        f"--- stdout\n{out.read_text()[-3000:]}\n"
                        f"--- stderr\n{err.read_text(errors='replace')[-6000:]}{logs}", pytrace=False)
    return subprocess.CompletedProcess(argv, code, out.read_text(), err.read_text())


def wait_for(predicate, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
