"""Where a private server runs on this machine: a free loopback port, never the system server's
(`free_port`, `check_port`), and the CPUs a taskset list names (`parse_cpus`).
"""
from __future__ import annotations

import re
import socket

from ..core.errors import ConfigError, ServerError

FORBIDDEN_PORTS = {3306, 33060}


class PortInUse(ServerError):
    pass


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_port(port: int) -> None:
    """Refuse port 3306 (the system server's), and any port something already listens on."""
    if port in FORBIDDEN_PORTS:
        raise PortInUse(f"port {port} is reserved for the system server; dbstudies never uses it")
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            raise PortInUse(f"port {port} on 127.0.0.1 is in use ({e.strerror}); "
                            f"choose another or let dbstudies pick a free one") from None


def parse_cpus(spec: str) -> list[int]:
    """Parse a taskset CPU list: "0", "0-3", "0,2-3" → sorted CPU numbers.

    >>> parse_cpus("0,2-3")
    [0, 2, 3]
    """
    cpus: set[int] = set()
    for part in str(spec).split(","):
        m = re.fullmatch(r"\s*(\d+)(?:-(\d+))?\s*", part)
        if not m:
            raise ConfigError(f"bad CPU list {spec!r} (expected e.g. '0', '0-3' or '0,2-3')")
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        if b < a:
            raise ConfigError(f"bad CPU range {part!r} in {spec!r}")
        cpus.update(range(a, b + 1))
    return sorted(cpus)
