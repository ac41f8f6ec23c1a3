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

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from . import rootfs
from .rootfs import Flavour


@dataclass(frozen=True)
class Wrapper:
    """A program a server runs under (valgrind): its argv before the server's (paths as the
    server sees them), what it needs bound into a rootfs flavour's tree — (bwrap's `--bind`
    or `--ro-bind`, a host path, where it appears inside) — and the command name the
    server's process takes under it (how `server_pid` finds it below bwrap)."""
    argv: tuple[str, ...]
    mounts: tuple[tuple[str, Path, Path], ...] = ()
    comm: str | None = None


def root_of(flavour: "Flavour") -> "Flavour | None":
    """The rootfs flavour whose tree runs `flavour`'s programs (itself, or a directory
    flavour's runtime), or None for the host's."""
    if flavour.source == "rootfs":
        return flavour
    return flavour.runtime_flavour if flavour.source == "dir" else None


def prefix(flavour: "Flavour", writable: Iterable[Path], root: Path = rootfs.ROOTFS_DIR,
           mounts: Iterable[tuple[str, Path, Path]] = ()) -> list[str]:
    """The argv prefix that runs a program of the flavour: nothing for the host's binaries;
    bwrap into the flavour's tree (or its runtime's) for a rootfs flavour (a directory one),
    with `writable` bound read-write (and the directory flavour's own folder read-only), and
    `mounts` — (bwrap's `--bind` or `--ro-bind`, a host path, where it appears inside) — too."""
    runtime = root_of(flavour)
    if runtime is None:
        return []
    top = rootfs.tree(runtime, root)
    argv = ["bwrap", "--ro-bind", str(top), "/", "--dev", "/dev",
            "--proc", "/proc", "--tmpfs", "/tmp", "--die-with-parent"]
    binds = [("--ro-bind", Path(flavour.path))] if flavour.source == "dir" else []
    binds = [(how, path.resolve(), path.resolve()) for how, path in
             [*binds, *(("--bind", Path(w)) for w in writable)]]
    for how, source, inside in [*binds, *mounts]:
        inside = Path(inside)
        if not inside.is_relative_to("/tmp"):  # a mount point in the read-only tree
            (top / inside.relative_to("/")).mkdir(parents=True, exist_ok=True)
        argv += [how, str(Path(source).resolve()), str(inside)]
    return [*argv, "--"]


def server_pid(flavour: "Flavour", spawned: int, wrapped: str | None = None) -> int:
    """The server's own PID given the PID we spawned (bwrap's, when it runs in a rootfs);
    `wrapped`: the command name the server runs under (valgrind's tool), if it has one."""
    if root_of(flavour) is None:
        return spawned
    return descendant(spawned, wrapped or Path(flavour.server).name) or spawned


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
