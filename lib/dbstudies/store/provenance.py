"""Where a run's numbers came from: the checkout, the packages, the host and its storage.

`results.Run.create` records these in a run's metadata; the report's header shows them.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import importlib.metadata
import os
import platform
import re
import time
from pathlib import Path
from typing import Any

import psutil

from ..core import paths, proc


def now() -> str:
    """This moment in UTC, ISO 8601 to the second (what metadata records)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def git_state(repo: Path = paths.REPO) -> dict[str, Any]:
    """The checkout's commit and whether tracked files differ from it."""
    try:
        commit = proc.run(["git", "-C", repo, "rev-parse", "HEAD"], timeout=30).stdout.strip()
        dirty = proc.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"],
                         timeout=30).stdout.strip() != ""
    except proc.ProcError:
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


def package_versions() -> dict[str, str]:
    names = ["dbstudies", "numpy", "pandas", "pyarrow", "scipy", "matplotlib", "seaborn",
             "mysql-connector-python", "papermill", "nbconvert", "ipykernel"]
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def virtual_machine() -> str | None:
    """The hypervisor this host runs under ("kvm", …; "virtual machine" when only the CPU's
    hypervisor flag says so), or None on bare metal. A VM's vCPUs wake up slower and share
    their physical cores: a report names it beside the host."""
    with contextlib.suppress(proc.ProcError, OSError):
        kind = proc.run(["systemd-detect-virt", "--vm"], timeout=30, check=False).stdout.strip()
        if kind and kind != "none":
            return kind
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        flags = next((ln for ln in f if ln.startswith("flags")), "")
        if "hypervisor" in flags.split():
            return "virtual machine"
    return None


LOOP = 3_000_000  # the probe's additions: ≈ 37 ms on this machine's fast hosts


def speed_probe(tries: int = 3) -> float:
    """How fast this host runs a fixed piece of CPU work now: the fastest of `tries` runs of
    one loop of additions, in ms (the least disturbed; ≈ 0.1 s in all). Recorded at a run's
    start and end (`host_facts`, `results.Run.finish`): two runs' hosts differ in speed by
    their ratio — the 2-vCPU hosts here ran it 1.6–2.6× apart while every other fact matched."""
    def once() -> float:
        t = time.perf_counter()
        sum(range(LOOP))
        return (time.perf_counter() - t) * 1000
    return round(min(once() for _ in range(tries)), 1)


def machine_id() -> str | None:
    """This machine's identity (a hash of /etc/machine-id: every host here is named "vm"),
    or None where it has none."""
    with contextlib.suppress(OSError):
        text = Path("/etc/machine-id").read_text().strip()
        return hashlib.sha256(text.encode()).hexdigest()[:12] if text else None
    return None


def host_facts(where: Path) -> dict[str, Any]:
    """CPU model, cores, memory, kernel, the hypervisor if any, the filesystem a run's
    files live on, the machine's identity and its speed now (`speed_probe`)."""
    model = None
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:  # psutil does not say
        model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), None)
    try:
        fs = proc.run(["findmnt", "-n", "-o", "FSTYPE,SOURCE", "--target", where], timeout=30).stdout.strip()
    except proc.ProcError:
        fs = None
    cores = psutil.cpu_count(logical=False)
    return {"hostname": platform.node(), "cpu_model": model, "cpus": psutil.cpu_count(),
            "threads_per_core": psutil.cpu_count() // cores if cores else None,
            "cpus_usable": len(os.sched_getaffinity(0)), "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "kernel": platform.release(), "os": _os_release(), "filesystem": fs,
            "virtual_machine": virtual_machine(), "machine_id": machine_id(), "loop_ms": speed_probe(),
            "storage": storage_facts(where), **kernel_knobs()}


def kernel_knobs(root: Path = Path("/")) -> dict[str, Any]:
    """What the kernel lets a server do that a comparison silently depends on (None where
    the host does not say): `kernel.io_uring_disabled` (0 allows io_uring to all, 1 to a
    group, 2 to none: MariaDB then falls back to native AIO), the CPU frequency governor of
    every CPU (one value, or each distinct one) and transparent huge pages' mode.

    >>> import tempfile
    >>> t = Path(tempfile.mkdtemp())
    >>> (t / "proc/sys/kernel").mkdir(parents=True); _ = (t / "proc/sys/kernel/io_uring_disabled").write_text("2\\n")
    >>> (t / "sys/kernel/mm/transparent_hugepage").mkdir(parents=True)
    >>> _ = (t / "sys/kernel/mm/transparent_hugepage/enabled").write_text("always [madvise] never\\n")
    >>> kernel_knobs(t)
    {'io_uring_disabled': 2, 'cpu_governor': None, 'transparent_hugepages': 'madvise'}
    """
    def read(path: str) -> str | None:
        with contextlib.suppress(OSError):
            return (root / path).read_text().strip()
        return None
    uring = read("proc/sys/kernel/io_uring_disabled")
    governors = sorted({g for g in (read(str(f.relative_to(root))) for f in
                                    (root / "sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")) if g})
    thp = read("sys/kernel/mm/transparent_hugepage/enabled")
    chosen = re.search(r"\[(\w+)\]", thp or "")
    return {"io_uring_disabled": int(uring) if uring and uring.isdigit() else None,
            "cpu_governor": ", ".join(governors) or None, "transparent_hugepages": chosen.group(1) if chosen else thp}


def storage_facts(where: Path) -> dict[str, Any]:
    """The storage `where` is on: filesystem and its mount options, block device, whether
    the kernel calls it rotational, its model and size (empty fields where unknown; a
    virtual disk may call itself rotational whatever is behind it)."""
    out: dict[str, Any] = {"filesystem": None, "mount_options": None, "device": None,
                           "rotational": None, "model": None, "size_gib": None}
    with contextlib.suppress(proc.ProcError):
        line = proc.run(["findmnt", "-n", "-o", "FSTYPE,OPTIONS", "--target", where],
                        timeout=30).stdout.split()
        out["filesystem"], out["mount_options"] = (line + [None, None])[:2]
    with contextlib.suppress(OSError):
        dev = os.stat(where).st_dev
        block = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").resolve()
        disk = block if (block / "queue").exists() else block.parent  # a partition's disk
        out["device"] = block.name

        def read(name: str) -> str | None:
            with contextlib.suppress(OSError):
                return (disk / name).read_text().strip()
            return None
        rotational, size = read("queue/rotational"), read("size")
        out["rotational"] = None if rotational is None else rotational == "1"
        out["model"] = read("device/model")
        out["size_gib"] = round(int(size) * 512 / 2**30, 1) if size else None
    return out


def _os_release() -> str | None:
    with contextlib.suppress(OSError), open("/etc/os-release") as f:
        for line in f:
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    return None
