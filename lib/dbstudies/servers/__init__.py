"""Servers: flavours (what to run), their config dialect, how they are launched, instances.

    flavour.py   Flavour (env/servers/<name>.toml): source (system | rootfs | dir | remote), programs,
                 the options its binary knows
    catalogue.py the flavours there are: files read and checked, a directory made a flavour
    tree.py      a server from a directory: layout, binary checks, version detection
    rootfs.py    a Debian suite's binaries in a cached minimal rootfs (mmdebstrap)
    launch.py    the argv prefix (host | bwrap, a directory bound into a runtime) and the real PID
    cnf.py       my.cnf fragments and rendering; the `Intent` and the like-for-like `ALIGNED`
    dialect.py   one dialect per family and version: what an intent is called on a server
    instance.py  Server: a private instance (init, start, restart, cold restart, stop)
    place.py     where it runs: a free loopback port, a taskset CPU list
    facts.py     what a run records of its binary and its AIO
    remote.py    RemoteServer: a server somewhere else, used as it is
    factory.py   which of the two runs a flavour (`instance`, `check_installed`)
    compression.py  compressed-table formats: what each candidate asks of a server

Everything a study needs is importable from here (`servers.Server`, `servers.Intent` …).
"""
from __future__ import annotations

from ..core.errors import ServerError
from .catalogue import dir_flavour, dir_flavour_text, list_flavours, load_flavour
from .cnf import ALIGN, ALIGNED, BASE_INTENT, Intent, base_intent, norm_key, read_cnf, render_cnf, size_bytes
from .dialect import SHOWN_AS, Dialect, Unavailable
from .factory import add_dir, check_installed, instance
from .facts import binary_record
from .flavour import (
                  Flavour,
                  bad_values,
                  disk_use,
                  known_options,
                  package_version,
                  same_value,
                  unknown_settings,
)
from .instance import (
                  CONNECTION_HEADROOM,
                  DEFAULT_MAX_CONNECTIONS,
                  Server,
                  ServerDied,
                  configured,
)
from .place import FORBIDDEN_PORTS, PortInUse, check_port, free_port, parse_cpus

__all__ = ["ALIGN", "ALIGNED", "SHOWN_AS", "Dialect", "add_dir", "base_intent", "size_bytes", "BASE_INTENT", "bad_values", "CONNECTION_HEADROOM", "DEFAULT_MAX_CONNECTIONS", "FORBIDDEN_PORTS",
           "Flavour", "Intent", "PortInUse", "Server", "ServerDied", "ServerError", "Unavailable",
           "binary_record", "check_installed", "check_port", "configured", "dir_flavour", "dir_flavour_text", "disk_use", "free_port", "instance", "known_options", "list_flavours",
           "load_flavour", "norm_key", "package_version", "parse_cpus", "read_cnf",
           "render_cnf", "same_value", "unknown_settings"]
