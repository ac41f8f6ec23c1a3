"""How a flavour's programs are launched, and which process is the server.

System flavours run the host's binaries as they are. Rootfs flavours run through bwrap:
the flavour's tree read-only as /, the host's /dev and /proc, a private /tmp, and only the
instance's own directories (datadir, logs, socket directory) bound writable at their own
paths; the host's network (loopback ports) is shared. Under bwrap the process we spawn is
bwrap itself, so `server_pid` finds the real mariadbd/mysqld below it — CPU and I/O sampling
must measure the server, not its launcher.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from . import rootfs
from .rootfs import Flavour


def prefix(flavour: "Flavour", writable: Iterable[Path], root: Path = rootfs.ROOTFS_DIR) -> list[str]:
    """The argv prefix that runs a program of the flavour: nothing for the host's binaries;
    bwrap into the flavour's tree for a rootfs flavour, with `writable` bound read-write."""
    if flavour.source != "rootfs":
        return []
    top = rootfs.tree(flavour, root)
    argv = ["bwrap", "--ro-bind", str(top), "/", "--dev", "/dev",
            "--proc", "/proc", "--tmpfs", "/tmp", "--die-with-parent"]
    for path in writable:
        path = Path(path).resolve()
        if not path.is_relative_to("/tmp"):  # a mount point in the read-only tree
            (top / path.relative_to("/")).mkdir(parents=True, exist_ok=True)
        argv += ["--bind", str(path), str(path)]
    return [*argv, "--"]


def server_pid(flavour: "Flavour", spawned: int) -> int:
    """The server's own PID given the PID we spawned (bwrap's, for a rootfs flavour)."""
    if flavour.source != "rootfs":
        return spawned
    return descendant(spawned, Path(flavour.server).name) or spawned


def descendant(pid: int, name: str) -> int | None:
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
