"""A flavour's server, whatever its source: the one place that knows which class runs it.

`flavour.py` describes servers and `instance.py` / `remote.py` run them; this module sits
above all three, so that none of them imports another one back.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Protocol

from ..core import paths
from ..core.errors import ConfigError
from .catalogue import dir_flavour, dir_flavour_text, list_flavours
from .cnf import Intent
from .flavour import Flavour
from .instance import Server
from .remote import RemoteServer, check_reachable, password


class Target(Protocol):
    """What the measurement loop uses of a server, private (`Server`) or remote
    (`RemoteServer`): both implement it, the remote one refusing what it cannot do."""
    flavour: Flavour
    port: int
    pid: int | None
    version: str | None

    def start(self, settings: Mapping[str, Any] | None = None, *, intent: Intent | None = None) -> None: ...

    def stop(self, timeout: float = 120.0) -> None: ...

    def restart(self, settings: Mapping[str, Any] | None = None, *,
                intent: Intent | None = None) -> None: ...

    def cold_restart(self, settings: Mapping[str, Any] | None = None, *,
                     intent: Intent | None = None) -> bool: ...

    def query(self, sql: str) -> list[tuple]: ...

    def connect(self, **kw: Any) -> Any: ...


def instance(flavour: Flavour, workdir: Path, **kw: Any) -> Target:
    """A server of `flavour`: a private `Server` in `workdir`, or for a remote flavour the
    `RemoteServer` it names (which ignores what only a private one uses)."""
    if flavour.remote:
        return RemoteServer(flavour, workdir, password=password(flavour), **kw)
    return Server(flavour, workdir, **kw)


def check_installed(flavour: Flavour) -> None:
    """The host's binaries are there (system), the rootfs is provisioned or can be
    (rootfs), or the server answers (remote); else a `ServerError` saying what to do."""
    if flavour.remote:
        check_reachable(flavour)
    else:
        flavour.check_installed()


def add_dir(name: str, folder: Path, runtime: str = "", *, servers_dir: Path = paths.SERVERS_DIR,
            say=print) -> tuple[Path, Flavour]:
    """Write `servers_dir`/NAME.toml for the server in `folder` (run in `runtime`'s rootfs when
    given), after detecting what it is: (the file, the flavour). Nothing is written when the
    name is taken or the directory is not a runnable server (a ConfigError in one line)."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ConfigError(f"flavour name {name!r}: letters, digits, '.', '_' and '-' only")
    taken = set(list_flavours(servers_dir)) | set(list_flavours())
    if name in taken:
        raise ConfigError(f"flavour {name!r} exists already ({', '.join(sorted(taken))}); choose another name")
    flavour = dir_flavour(name, Path(folder), runtime, say=say, servers_dir=servers_dir)
    out = Path(servers_dir) / f"{name}.toml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dir_flavour_text(flavour, "dbstudies servers add"))
    return out, flavour
