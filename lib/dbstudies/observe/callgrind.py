"""The server's instructions, counted by valgrind's callgrind: a measure the host's noise
cannot move (no PMU is needed; these VMs have none).

The server runs under `valgrind --tool=callgrind --instr-atstart=no`: nothing is counted
until a window opens (`callgrind_control -i on`), and everything its threads execute in
user space is counted until it closes (`-i off`); the window is then dumped, one file per
thread (`--separate-threads=yes`). A window's `Count` holds each thread's instructions and
which threads served clients (they ran `dispatch_command`, a symbol even Debian's stripped
binaries export): the instructions per transaction are the serving threads' count over the
window's transactions; what the background threads did in the window is kept beside it.
Under valgrind they run about 17 times slower in wall time while their timers keep wall time,
so a 10-s background task lands in a window by chance, not per transaction (seen here: one
window in four, +9.7 M instructions on a 128 M window, all in one InnoDB thread).

What the count is not: time. Valgrind runs the server's threads one at a time (spinning and
lock waits are not what they are natively); system calls and I/O are not counted.

>>> prefix(Path("/r/counts"))[:4]
['valgrind', '--tool=callgrind', '--instr-atstart=no', '--separate-threads=yes']
>>> w = wrapper(Path("/r/counts"), rootfs=True)
>>> w.argv[:2], w.argv[-1], w.comm, w.mounts[0]
(('env', 'GLIBCXX_FORCE_NEW=1'), '--vgdb-prefix=/r/counts/vgdb', 'callgrind-amd64-linux', ('--bind', PosixPath('/r/counts'), PosixPath('/r/counts')))
>>> settings_for({"innodb_buffer_pool_size_max"}, {"innodb_buffer_pool_size": "1G"})
{'innodb_use_native_aio': 'OFF', 'innodb_buffer_pool_size_max': '1G'}
"""
from __future__ import annotations

import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable, Mapping

from .. import servers
from ..core import comparisons as C
from ..core import proc
from ..core.errors import DbStudiesError
from ..servers import launch

VALGRIND, CONTROL = "valgrind", "callgrind_control"
SERVING = ("dispatch_command",)   # a thread that ran it served a client in the window
CONTROL_TIMEOUT = 120.0           # callgrind_control on a busy server under valgrind
DEFAULT_POOL = "128M"             # the servers' default buffer pool, where none is set
# a window's wall time, measured here (Debian's 10.11, point selects at one thread, a busy
# host): 0.7–2.5 ms a transaction counted, and about 1 s to switch on, off and dump
SECONDS_PER_TXN, WINDOW_OVERHEAD = 0.0015, 1.5


def caveats(threads: Iterable[int], writes: bool) -> list[str]:
    """What a count run's verdicts rest on, said beside them (Markdown, one item each)."""
    out = ["**A count, not a time.** Instructions per transaction are the user-space instructions the "
           "server's threads that served the client executed in each window (valgrind's callgrind), over the "
           "window's transactions; all its threads' (background work included) are shown beside them. Valgrind "
           "runs the server's threads one at a time, so spinning and lock waits are not what they are natively; "
           "system calls and I/O are not counted; a background thread counts when it runs inside a window, "
           "which under valgrind's slowdown is by chance more than per transaction. It says which server does "
           "more work per transaction — not which is faster."]
    if any(t > 1 for t in threads):
        out.append("**More than one client thread.** Valgrind runs one thread at a time: concurrent "
                   "transactions' waits on each other are not what they are natively, and their spinning is "
                   "counted as work. One client thread is where the count and the time agree best.")
    if writes:
        out.append("**Writes.** The I/O a write causes is not counted, and its flushing runs in background "
                   "threads outside the serving threads' count: the count judges the statements' CPU work only.")
    return out


class CountError(DbStudiesError):
    """A window that could not be opened, closed or read."""


def problems(what: str = "count") -> list[str]:
    """Why this machine cannot count a server's instructions (empty: it can)."""
    missing = [p for p in (VALGRIND, CONTROL) if shutil.which(p) is None]
    return [f"{what}: `{', '.join(missing)}` not installed (Debian's valgrind; `make setup` installs it)"
            ] if missing else []


def prefix(out_dir: Path, valgrind: str = VALGRIND) -> list[str]:
    """The argv before the server's: callgrind, counting nothing until a window opens,
    dumping each thread to its own file under `out_dir`, its pipes to callgrind_control
    there too (`--vgdb-prefix`: a rootfs flavour's /tmp is its own)."""
    return [valgrind, "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes",
            f"--callgrind-out-file={out_dir}/callgrind.out.%p", f"--vgdb-prefix={out_dir}/vgdb"]


TOOL = "callgrind-amd64-linux"                 # the process a counted server runs as (its command name)
HOST_TOOLS = Path("/usr/libexec/valgrind")     # valgrind's tools (static programs) and preloads
INSIDE = Path("/run/dbstudies-valgrind")       # where a rootfs tree sees the host's launcher and C library
LOADER = Path("/lib64/ld-linux-x86-64.so.2")


def wrapper(out_dir: Path, rootfs: bool = False) -> launch.Wrapper:
    """callgrind before a server (`prefix`), `out_dir` bound writable. In a rootfs flavour's
    tree, the host's valgrind: its launcher run by the host's C library (it needs glibc 2.34;
    bullseye has 2.31), its tools where it looks for them, and what Debian's `valgrind`
    script sets (libstdc++'s allocator cache off, as for a host server)."""
    out_dir = Path(out_dir)
    if not rootfs:
        return launch.Wrapper(tuple(prefix(out_dir)), comm=TOOL)
    bin_dir, lib_dir = INSIDE / "bin", INSIDE / "lib"
    launcher = Path(shutil.which(VALGRIND) or "/usr/bin/valgrind").resolve()
    if launcher.with_name(launcher.name + ".bin").exists():  # Debian's valgrind: a script running it
        launcher = launcher.with_name(launcher.name + ".bin")
    argv = ["env", "GLIBCXX_FORCE_NEW=1", str(lib_dir / LOADER.name), "--library-path", str(lib_dir),
            *prefix(out_dir, str(bin_dir / launcher.name))]
    mounts = (("--bind", out_dir, out_dir), ("--ro-bind", launcher.parent, bin_dir),
              ("--ro-bind", LOADER.resolve().parent, lib_dir), ("--ro-bind", HOST_TOOLS, HOST_TOOLS))
    return launch.Wrapper(tuple(argv), mounts, TOOL)


def settings_for(known: Iterable[str] | None, settings: Mapping[str, Any]) -> dict[str, Any]:
    """What a server needs to start under valgrind: InnoDB's native AIO off (valgrind does
    not know io_uring: the server hangs in its start-up), and, where the server has it, the
    buffer pool's reserved address space capped at its size (MariaDB 10.11 reserves 8 TB
    unless told, which valgrind cannot map). `known`: the server's option names
    (`servers.known_options`; None: not known, nothing capped)."""
    out: dict[str, Any] = {"innodb_use_native_aio": "OFF"}
    if "innodb_buffer_pool_size_max" in set(known or ()):
        out["innodb_buffer_pool_size_max"] = settings.get("innodb_buffer_pool_size") or DEFAULT_POOL
    return out


def flavour_problems(name: str) -> list[str]:
    """Why a flavour's server cannot be counted (empty: it can): a remote server is not ours
    to start under valgrind."""
    try:
        flavour = servers.load_flavour(name)
    except DbStudiesError:
        return []  # an unknown flavour is the flavour check's to say
    if flavour.remote:
        return [f"count: {name} is a remote server: only a server dbstudies starts itself can run under valgrind"]
    return []


def server_options(flavour: Any, folder: Path, settings: Mapping[str, Any]) -> dict[str, Any]:
    """What a counted server is created with: valgrind before it, its dumps under `folder`,
    and the settings it needs to start under valgrind (`settings_for`) on top of `settings`."""
    folder.mkdir(parents=True, exist_ok=True)
    return {"wrapper": wrapper(folder, rootfs=launch.root_of(flavour) is not None),
            "settings": {**settings, **settings_for(servers.known_options(flavour), settings)}}


class _ByCount:
    """`COMPARISONS` of a counted study: the count's where a run counts, its kind's otherwise
    (the next class of its MRO that declares them); read on the class, every one it may have
    (to look one up by its key)."""

    def __get__(self, obj: Any, cls: Any = None) -> tuple[C.Comparison, ...]:
        mro = (cls or type(obj)).__mro__
        kind = next(vars(k)["COMPARISONS"] for k in mro[mro.index(Counted) + 1:] if "COMPARISONS" in vars(k))
        if obj is None:
            return (*kind, *C.COUNTED)
        return C.COUNTED if obj.count else kind


@dataclass(frozen=True, kw_only=True)
class Counted:
    """A sysbench study measured by the server's instructions (`count`): every measured step
    is a window of `count` transactions with its server under callgrind, judged on the
    instructions per transaction of the threads that served them (lower is better) instead of
    throughput and latency, which valgrind's slowdown makes meaningless. Mixed in before a
    `SysbenchParams`."""
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "count": (
            "measure by the server's instructions: every measured step a window of this many "
            "transactions with the server under valgrind's callgrind, judged on the instructions "
            "per transaction of the threads that served them — a count, not a time (see "
            "Statistics); 0: throughput and latency"),
    }
    COMPARISONS = _ByCount()
    count: int = 0

    def block_seconds(self) -> float:
        """A block's estimate: a counted step is a window of `count` transactions (`duration`
        only bounds it)."""
        if not self.count:
            return super().block_seconds()  # type: ignore[misc]
        cells = len(self.workloads) * len(self.threads)  # type: ignore[attr-defined]
        return self.warmup + cells * (self.count * SECONDS_PER_TXN + WINDOW_OVERHEAD)  # type: ignore[attr-defined]

    def shared_problems(self) -> list[str]:
        out = super().shared_problems()  # type: ignore[misc]
        if not self.count:
            return out
        if self.count < 100:
            out.append(f"count: at least 100 transactions a window, got {self.count}")
        pool = [s for s in getattr(self, "schedulers", []) if s != "one-thread-per-connection"]
        if pool:
            out.append(f"count: a {pool[0]} arm cannot be judged by count: valgrind runs the server's "
                       "threads one at a time, so a pool's scheduling is not what it is natively")
        for name in dict.fromkeys([getattr(self, "flavour", None), *(getattr(self, "flavours", None) or [])]):
            if name:
                out += flavour_problems(name)
        return out + problems("count")


@dataclass
class Count:
    """One window: every thread's instructions (valgrind's thread number → Ir), the threads
    that served clients, and the dump files it was read from."""
    threads: dict[int, int]
    serving: frozenset[int]
    files: list[Path] = field(default_factory=list)
    prefix: Path | None = None  # the dump's files but for their `-<thread>`

    @property
    def served(self) -> int:
        """The instructions of the threads that served clients."""
        return sum(v for t, v in self.threads.items() if t in self.serving)

    @property
    def total(self) -> int:
        return sum(self.threads.values())


class Window:
    """Count what a server process executes between `open` and `close`: each close dumps
    the window (callgrind's part n for the n-th dump) and reads it."""

    def __init__(self, pid: int, out_dir: Path):
        self.pid, self.out_dir, self.parts = pid, Path(out_dir), 0

    @classmethod
    def of(cls, server: Any) -> "Window | None":
        """A window on `server`'s current process, if it runs under callgrind (`wrapper`)."""
        argv = getattr(getattr(server, "wrapper", None), "argv", ())
        out = next((a.split("=", 1)[1] for a in argv if a.startswith("--callgrind-out-file=")), None)
        return cls(server.pid, Path(out).parent) if out and server.pid is not None else None

    def _control(self, *args: str) -> None:
        try:
            proc.run([CONTROL, f"--vgdb-prefix={self.out_dir}/vgdb", *args, str(self.pid)],
                     timeout=CONTROL_TIMEOUT)
        except proc.ProcError as e:
            raise CountError(f"`{CONTROL} {' '.join(args)}` failed on the server (pid {self.pid}): "
                             f"{proc.tail(e.output, 3) or e}") from None

    def open(self) -> None:
        self._control("-i", "on")

    def close(self) -> Count:
        """Stop counting, dump the window, read it. A window whose dump holds no thread, or
        whose threads counted nothing, is an error: instrumentation never came on."""
        self._control("-i", "off")
        self._control("-d")
        self.parts += 1
        files = sorted(self.out_dir.glob(f"callgrind.out.{self.pid}.{self.parts}-*"))
        if not files:
            raise CountError(f"the window's dump (part {self.parts}) is not under {self.out_dir}")
        threads, serving = {}, set()
        for f in files:
            thread = int(f.name.rsplit("-", 1)[1])
            info = read(f)
            threads[thread] = info.total
            if any(name.split("(")[0] in SERVING for name in info.self_cost):
                serving.add(thread)
        count = Count(threads, frozenset(serving), files, self.out_dir / f"callgrind.out.{self.pid}.{self.parts}")
        if count.total == 0:
            raise CountError(f"the window counted no instruction in {len(files)} thread(s): "
                             "instrumentation never came on")
        return count


@dataclass
class Profile:
    """A dump file read: its total, and per function its own instructions and those of
    the calls it made (inclusive = self + calls, a recursive call not counted twice)."""
    total: int
    self_cost: Counter
    inclusive: Counter


_NAMED = re.compile(r"^\((\d+)\)(?: (.*))?$")
_ADDRESS = re.compile(r"^0x[0-9a-f]+$")
UNNAMED = "(functions without a name)"  # a stripped binary's: only its exported symbols are named


def functions(files: Iterable[Path], inclusive: bool = False) -> Counter:
    """Each function's own instructions (`inclusive`: with those of the calls it made) summed
    over the dump files of one window's threads; the functions a stripped binary leaves unnamed
    (bare addresses) as one entry (`UNNAMED`) of their own instructions — inclusively they
    call each other, and a sum would count a nested call twice: none is given."""
    out: Counter = Counter()
    for f in files:
        profile = read(f)
        for name, cost in (profile.inclusive if inclusive else profile.self_cost).items():
            if _ADDRESS.match(name):
                if not inclusive:
                    out[UNNAMED] += cost
                continue
            out[name] += cost
    return out


def serving_files(prefix: Path, serving: Iterable[int]) -> list[Path]:
    """A window's dump files of the threads that served the client (`Count.serving`)."""
    return [f for t in serving for f in prefix.parent.glob(f"{prefix.name}-{int(t):02d}")]


class _Names(dict):
    """A dump's table of compressed names, which fn= and cfn= share: `(id) name` on first
    use, `(id)` after it."""

    def __call__(self, text: str) -> str:
        m = _NAMED.match(text)
        if not m:
            return text
        if m.group(2) is not None:
            self[m.group(1)] = m.group(2)
        return self.get(m.group(1), f"({m.group(1)})")


def read(path: Path) -> Profile:
    """Parse a callgrind dump (one event, Ir): its `totals:` and per-function costs (its
    names compressed: `_Names`)."""
    name, self_cost, calls = _Names(), Counter(), Counter()
    total, fn, callee, call_next = 0, "", "", False
    with open(path, errors="replace") as f:
        for line in f:
            if not line or line[0] in "#\n":
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                if call_next:
                    cost = _cost(line)
                    if callee != fn:
                        calls[fn] += cost
                    call_next = False
                else:
                    self_cost[fn] += _cost(line)
            elif line.startswith("fn="):
                fn = name(line[3:].rstrip("\n"))
            elif line.startswith("cfn="):
                callee = name(line[4:].rstrip("\n"))
            elif line.startswith("calls="):
                call_next = True
            elif line.startswith("totals:"):
                total = int(line.split()[1])
    if not total:
        total = sum(self_cost.values())
    inclusive = Counter({k: self_cost[k] + calls[k] for k in set(self_cost) | set(calls)})
    return Profile(total, self_cost, inclusive)


def _cost(line: str) -> int:
    """The Ir of a cost line (`position cost`; a missing cost is 0)."""
    parts = line.split()
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
