"""On-CPU profiles of a server process with Linux `perf`, folded into stacks.

A `Recorder` watches one sysbench step (it is a `workloads.sysbench.Observer`): it has
`perf record -e cpu-clock -g -a` record from when the step starts to when it ends, then
folds the samples taken while a thread of the server process was on a CPU into one line per
distinct stack — `thread;outermost;…;innermost count` — the form flame graphs are drawn from.
The raw perf.data is removed once folded. It samples every CPU, not the server's threads
(`-p PID`): per-thread events are switched at every context switch, and the server's
threads switch at every round trip — measured here (tests/benchmarks/profiling_overhead.py,
oltp_read_only at 8 threads, paired 5-s steps) per-thread sampling cost 34 % of the
throughput (0.66 [0.60, 0.73], 8 pairs), per-CPU sampling 3–6 %, within the noise (0.97
[0.90, 1.05] in 6 pairs, 0.94 [0.88, 1.01] in 8).

Only the software event `cpu-clock` is used: these VMs expose no hardware counters. Stacks
are unwound by frame pointers (perf's default), so they are as deep as the binary keeps its
frame pointers; the innermost function of a sample — where the CPU was — is always right,
which is what the difference between two arms is computed from. Frames without a symbol
are named by their object file (`[libc.so.6]`).

    >>> fold('''mariadbd
    ... \\t  5e1 do_select (/usr/sbin/mariadbd)
    ... \\t  4f0 dispatch_command (/usr/sbin/mariadbd)
    ...
    ... mariadbd
    ... \\t  7a1 [unknown] (/usr/lib/x86_64-linux-gnu/libc.so.6)
    ... ''')
    {'mariadbd;dispatch_command;do_select': 1, 'mariadbd;[libc.so.6]': 1}
"""
from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping

from ..core import proc

FREQUENCY = 499      # samples per second per CPU (a prime: no lock-step with periodic work)
MAX_CELLS = 4        # cells profiled at most (the largest differences)
# profiled rounds per profile when `cpu_profile_rounds` is not given: each round profiles
# every chosen cell once on every arm, and the per-function differences are paired across
# rounds (`stats.profiles`), so their power grows with the rounds (see `CpuProfiled`)
PROFILE_ROUNDS = {"smoke": 2, "quick": 8, "full": 12}
STOP_TIMEOUT = 30.0  # seconds perf may take to write its data after SIGINT
SCRIPT_TIMEOUT = 300.0
PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")
_FRAME = re.compile(r"^\s+[0-9a-f]+\s+(?P<sym>.*?)(?:\s+\((?P<dso>[^()]*)\))?\s*$")


def problems(what: str = "cpu_profile") -> list[str]:
    """Why this machine cannot profile a server (empty: it can): no `perf`, or a kernel
    that refuses the software event on every CPU to this user. Asked of perf itself (a
    0.1-s trial), so a refusal is a parameter error before any server starts."""
    perf = shutil.which("perf")
    if perf is None:
        return [f"{what}: `perf` is not installed (Debian's linux-perf; `make setup` installs it)"]
    with tempfile.TemporaryDirectory(prefix="dbs-perf-") as tmp:
        try:
            r = proc.run([perf, "record", "-q", "-e", "cpu-clock", "-a", "-o", f"{tmp}/trial.data",
                          "--", "sleep", "0.1"], timeout=30, check=False)
        except proc.ProcError as e:
            return [f"{what}: `perf record` could not run: {e}"]
    if r.returncode != 0:
        level = PARANOID.read_text().strip() if PARANOID.exists() else "?"
        return [f"{what}: the kernel refused `perf record -e cpu-clock` (perf_event_paranoid = "
                f"{level}; as root: sysctl kernel.perf_event_paranoid=1): "
                f"{proc.tail(r.stderr, 3) or r.returncode}"]
    return []


def frame_name(sym: str, dso: str | None) -> str:
    """One frame as a flame graph names it: the symbol without its offset, or the object
    file's name where perf knows no symbol.

    >>> frame_name("do_select+0x1f", "/usr/sbin/mariadbd"), frame_name("[unknown]", "/lib/libc.so.6")
    ('do_select', '[libc.so.6]')
    """
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym.strip())
    if sym in ("", "[unknown]"):
        return f"[{Path(dso).name}]" if dso and dso != "[unknown]" else "[unknown]"
    return sym.replace(";", ":")


def fold(script: str) -> dict[str, int]:
    """`perf script -F comm,ip,sym,dso` output → {folded stack: samples}: each sample's
    thread name, then its frames outermost first (perf prints the innermost first)."""
    stacks: Counter[str] = Counter()
    thread, frames = None, []

    def close() -> None:
        if thread is not None:
            stacks[";".join([thread.replace(";", ":"), *reversed(frames)])] += 1

    for line in script.splitlines():
        if not line.strip():
            close()
            thread, frames = None, []
        elif not line[0].isspace():
            close()
            thread, frames = line.strip() or "[unknown]", []
        else:
            m = _FRAME.match(line)
            if m and thread is not None:
                frames.append(frame_name(m["sym"], m["dso"]))
    close()
    return dict(stacks)


def write_folded(stacks: Mapping[str, int], path: Path) -> None:
    """Stacks in the folded text form, most sampled first (one `stack count` a line)."""
    lines = [f"{s} {n}" for s, n in sorted(stacks.items(), key=lambda kv: (-kv[1], kv[0]))]
    path.write_text("\n".join(lines) + ("\n" if lines else ""))


def read_folded(path: Path) -> dict[str, int]:
    """A folded file back into {stack: samples}."""
    out: dict[str, int] = {}
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if stack:
            out[stack] = out.get(stack, 0) + int(n)
    return out


class Recorder:
    """`perf record` of every CPU for the length of a step, the samples of process `pid` (all
    its threads) folded into `out` (a .folded file) when it stops. An Observer of
    `Sysbench.run`.

    perf's set-up (`-a` reads every process on the host) takes 0.15 s on an idle machine and
    seconds on a loaded one, so a perf started with the step could miss all of a short step.
    `arm` starts it with its events off and returns once perf answers on its control fifo
    (its recording loop runs); `start` turns the events on and returns once perf has done so:
    both wait on perf's answer, never on a time."""

    def __init__(self, pid: int | None, out: Path, frequency: int = FREQUENCY):
        """`pid` None: the client's process, known when the step starts (`start`)."""
        self.pid, self.out, self.frequency = pid, Path(out), frequency
        self.data = self.out.with_suffix(".perf.data")
        self._p: subprocess.Popen | None = None
        self._fifos: tuple[str, int, int] | None = None  # (their directory, ctl fd, ack fd)
        self.samples = 0

    def arm(self) -> None:
        """Start perf with its events off; return once it takes commands."""
        if self._p is not None:
            return
        self.out.parent.mkdir(parents=True, exist_ok=True)
        where = tempfile.mkdtemp(prefix="dbs-perf-")
        os.mkfifo(f"{where}/ctl"), os.mkfifo(f"{where}/ack")
        # both ends opened before perf opens its own, so neither side blocks
        ack = os.open(f"{where}/ack", os.O_RDONLY | os.O_NONBLOCK)
        ctl = os.open(f"{where}/ctl", os.O_RDWR)
        self._fifos = (where, ctl, ack)
        self._p = proc.spawn(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(self.frequency),
                              "-g", "-a", "-D", "-1", "--control", f"fifo:{where}/ctl,{where}/ack",
                              "-o", str(self.data)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._command("ping")

    def start(self, t0: float, client_pid: int) -> None:
        if self.pid is None:
            self.pid = client_pid
        self.arm()
        self._command("enable")

    def _command(self, what: str) -> None:
        """Send perf a control command and wait for its acknowledgement."""
        assert self._p is not None and self._fifos is not None
        _, ctl, ack = self._fifos
        os.write(ctl, f"{what}\n".encode())
        deadline = time.monotonic() + STOP_TIMEOUT
        while True:
            poll = select.poll()
            poll.register(ack, select.POLLIN)
            ready = poll.poll(max(0.0, deadline - time.monotonic()) * 1000)
            got = os.read(ack, 64) if ready else None
            if got and got.startswith(b"ack"):
                return
            if got == b"" or got is None or self._p.poll() is not None:  # perf gone, or silent
                p = self._p
                proc.kill(p)
                err = p.stderr.read().decode("utf-8", "replace") if p.stderr else ""
                self.close()
                raise proc.ProcError(p.args, p.returncode, stderr=err,
                                     reason=f"perf record did not acknowledge '{what}' within {STOP_TIMEOUT:g} s")

    def close(self) -> None:
        """Stop perf without folding (a step that failed); its data and fifos removed."""
        p, self._p = self._p, None
        if p is not None:
            proc.kill(p)
            if p.stderr:
                p.stderr.close()
        self._drop_fifos()
        self.data.unlink(missing_ok=True)

    def _drop_fifos(self) -> None:
        if self._fifos is not None:
            where, ctl, ack = self._fifos
            self._fifos = None
            os.close(ctl), os.close(ack)
            shutil.rmtree(where, ignore_errors=True)

    def stop(self) -> None:
        """Stop perf (SIGINT: it writes its data and exits), fold its samples into `out`."""
        p, self._p = self._p, None
        if p is None:
            return
        if p.poll() is None:
            os.kill(p.pid, signal.SIGINT)
        try:
            _, err = p.communicate(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill(p)
            raise proc.ProcError(p.args, None, reason=f"perf record did not stop within {STOP_TIMEOUT:g} s") from None
        finally:
            self._drop_fifos()
        if not self.data.exists():
            raise proc.ProcError(p.args, p.returncode, stderr=(err or b"").decode("utf-8", "replace"),
                                 reason="perf record wrote no data")
        script = proc.run(["perf", "script", "-i", str(self.data), "-F", "comm,ip,sym,dso",
                           f"--pid={self.pid}"],
                          timeout=SCRIPT_TIMEOUT)
        stacks = fold(script.stdout)
        write_folded(stacks, self.out)
        self.samples = sum(stacks.values())
        self.data.unlink()


# ---------------------------------------------------------------- waits inside the server

WAITS_SQL = ("SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT FROM "
             "performance_schema.events_waits_summary_global_by_event_name WHERE COUNT_STAR > 0")


def wait_totals(server: Any) -> dict[str, tuple[int, float]] | None:
    """performance_schema's waits so far, per event: (count, seconds waited) — None where
    the server runs without performance_schema (MariaDB's default; an arm turns it on
    with `performance_schema=ON`, and MariaDB times mutex and rw-lock waits only with
    `performance_schema_instrument='wait/synch/%=ON'`)."""
    if str(server.query("SELECT @@performance_schema")[0][0]) not in ("1", "ON"):
        return None
    return {str(e): (int(n), float(t) / 1e12) for e, n, t in server.query(WAITS_SQL)}


def wait_deltas(before: Mapping[str, tuple[int, float]] | None,
                after: Mapping[str, tuple[int, float]] | None) -> list[dict[str, Any]]:
    """What was waited between two `wait_totals`, per event that counted any: event, count,
    wait_ms.

    >>> wait_deltas({"a": (1, 0.5)}, {"a": (3, 0.75), "b": (2, 0.001)})
    [{'event': 'a', 'count': 2, 'wait_ms': 250.0}, {'event': 'b', 'count': 2, 'wait_ms': 1.0}]
    """
    if before is None or after is None:
        return []
    out = []
    for event, (n, t) in after.items():
        n0, t0 = before.get(event, (0, 0.0))
        if n > n0:
            out.append({"event": event, "count": n - n0, "wait_ms": (t - t0) * 1e3})
    return out


def parse_cell(text: str) -> dict[str, Any] | None:
    """A cell named as `workload@threads` (None where the text is not of that form).

    >>> parse_cell("oltp_read_only@64"), parse_cell("oltp_read_only@x")
    ({'workload': 'oltp_read_only', 'threads': 64}, None)
    """
    workload, _, threads = str(text).rpartition("@")
    return {"workload": workload, "threads": int(threads)} if workload and threads.isdigit() else None


@dataclass(frozen=True, kw_only=True)
class CpuProfiled:
    """On-CPU profiles after the plan (`profile_cells`, `analysis.cpu_profiles`): with
    `cpu_profile`, each chosen cell is measured once more on every arm while `perf` samples
    its server; `cpu_profile_cells` names the cells (`workload@threads`) instead of the
    verdicts choosing them. Mixed in before a `SysbenchParams`."""
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "cpu_profile": (
            "after the plan, measure the cells a QPS verdict judged better or worse (the 4 largest "
            "differences; else the largest difference) once more on every arm with `perf` sampling "
            "the server; the report shows each arm's flame graph and what moved (see \"On-CPU "
            "profiles\"); a missing `perf` or a kernel that refuses it is a parameter error"),
        "cpu_profile_cells": (
            "with `cpu_profile`: profile these cells instead, e.g. `-p cpu_profile_cells "
            "'[\"oltp_read_only@64\"]'` (`workload@threads`)"),
        "cpu_profile_rounds": (
            "with `cpu_profile`: profiled rounds (each: every chosen cell once on every arm), the "
            "pairs each function's difference is judged on (default: smoke 2, quick 8, full 12; "
            "a time budget keeps their estimated time for them)"),
    }
    cpu_profile: bool = False
    cpu_profile_cells: list[str] | None = None
    cpu_profile_rounds: int | None = None

    def profile_rounds(self) -> int:
        """The profiled rounds: `cpu_profile_rounds`, else the profile's (`PROFILE_ROUNDS`)."""
        return self.cpu_profile_rounds or PROFILE_ROUNDS.get(self.profile, PROFILE_ROUNDS["quick"])  # type: ignore[attr-defined]

    def shared_problems(self) -> list[str]:
        out = super().shared_problems()  # type: ignore[misc]
        for text in self.cpu_profile_cells or []:
            cell = parse_cell(text)
            if cell is None or cell["workload"] not in self.workloads or cell["threads"] not in self.threads:
                out.append(f"cpu_profile_cells: {text!r} is not a cell of this run (workload@threads "
                                f"with a workload of {self.workloads} and threads of {self.threads})")
        if self.cpu_profile_rounds is not None and self.cpu_profile_rounds < 1:
            out.append(f"cpu_profile_rounds: {self.cpu_profile_rounds} — at least 1")
        if self.cpu_profile_cells and not self.cpu_profile:
            out.append("cpu_profile_cells: names cells to profile, but cpu_profile is false")
        if self.cpu_profile:
            out += problems("cpu_profile")
        return out
