"""What a run records of a server beyond its variables: its binary's path and SHA-256, and a
directory flavour's origin (`binary_record`); the asynchronous I/O its error log names at its
latest start (`aio_backend`).
"""
from __future__ import annotations

import re
from typing import Any

from ..core import paths
from .flavour import Flavour

AIO = re.compile(r"(?:InnoDB:|\[InnoDB\]) Using (io_uring|liburing|Linux native AIO|libaio|simulated AIO|"
                 r"generic (?:asynchronous )?(?:AIO|I/O))", re.IGNORECASE)


def aio_backend(error_log: str) -> str | None:
    """The asynchronous I/O InnoDB says it uses at its latest start (its error log; None if
    it does not say) — what `innodb_use_native_aio = ON` does depends on the build and on the
    kernel's `io_uring_disabled`, so the variable alone does not tell.

    >>> aio_backend("... [Note] InnoDB: Using Linux native AIO\\n... [Note] InnoDB: Using io_uring\\n")
    'io_uring'
    >>> aio_backend("[Note] InnoDB: Buffer pool(s) load completed") is None
    True
    """
    found = AIO.findall(error_log)
    return found[-1] if found else None


_SHA: dict[tuple, str] = {}


def binary_record(flavour: Flavour) -> dict[str, Any]:
    """What a run records of the server binary: its path and SHA-256 (hashed once per file
    state), and for a directory flavour where it came from and what it printed."""
    if flavour.remote:
        return {}
    server = flavour.host_binary
    if not server.is_file():
        return {}
    st = server.stat()
    key = (str(server), st.st_mtime_ns, st.st_size)
    if key not in _SHA:
        _SHA[key] = paths.sha256(server)
    out: dict[str, Any] = {"binary": str(server), "binary_sha256": _SHA[key]}
    if flavour.source == "dir":
        out.update(source="dir", directory=flavour.path, layout=flavour.layout,
                   version_text=flavour.version_text, runtime=flavour.runtime or None,
                   thread_pool=flavour.thread_pool)
    return out
