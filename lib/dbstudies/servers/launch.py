"""How a flavour's programs are launched, and which process is the server.

System flavours run the host's binaries as they are. Rootfs flavours run through bwrap:
the flavour's tree read-only as /, the host's /dev and /proc, a private /tmp, and only the
instance's own directories (datadir, logs, socket directory) bound writable at their own
paths; the host's network (loopback ports) is shared. A directory flavour with a `runtime`
runs the same way in its runtime's tree, its own directory bound read-only at its own path.
Under bwrap the process we spawn is bwrap itself, so `server_pid` finds the real
mariadbd/mysqld below it — CPU and I/O sampling must measure the server, not its launcher.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from . import rootfs
from .rootfs import Flavour


def root_of(flavour: "Flavour") -> "Flavour | None":
    """The rootfs flavour whose tree runs `flavour`'s programs (itself, or a directory
    flavour's runtime), or None for the host's."""
    if flavour.source == "rootfs":
        return flavour
    return flavour.runtime_flavour if flavour.source == "dir" else None


def prefix(flavour: "Flavour", writable: Iterable[Path], root: Path = rootfs.ROOTFS_DIR) -> list[str]:
    """The argv prefix that runs a program of the flavour: nothing for the host's binaries;
    bwrap into the flavour's tree (or its runtime's) for a rootfs flavour (a directory one),
    with `writable` bound read-write (and the directory flavour's own folder read-only)."""
    runtime = root_of(flavour)
    if runtime is None:
        return []
    top = rootfs.tree(runtime, root)
    argv = ["bwrap", "--ro-bind", str(top), "/", "--dev", "/dev",
            "--proc", "/proc", "--tmpfs", "/tmp", "--die-with-parent"]
    binds = [("--ro-bind", Path(flavour.path))] if flavour.source == "dir" else []
    for how, path in [*binds, *(("--bind", Path(w)) for w in writable)]:
        path = path.resolve()
        if not path.is_relative_to("/tmp"):  # a mount point in the read-only tree
            (top / path.relative_to("/")).mkdir(parents=True, exist_ok=True)
        argv += [how, str(path), str(path)]
    return [*argv, "--"]


def server_pid(flavour: "Flavour", spawned: int) -> int:
    """The server's own PID given the PID we spawned (bwrap's, when it runs in a rootfs)."""
    if root_of(flavour) is None:
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
