"""my.cnf: fragments read and rendered, and the config dialect of each server family.

Studies state *intent* — "a 512 MiB redo log", "the thread pool on", "O_DIRECT", "page
compression with zlib" — as an `Intent`; the family's dialect turns it into that server's own
variables (MariaDB's `innodb_log_file_size` is MySQL's `innodb_redo_log_capacity`). A feature
a flavour lacks raises `Unavailable` ("the thread pool is not available on mysql-9.7"), which
studies show as such instead of dropping or faking it. Plain settings (a dict of variables)
still pass through untouched, after the dialect's, for what no intent covers.

    >>> settings(Intent(redo_log="1G", thread_pool=False), "mysql", "mysql-9.7", thread_pool=False)
    {'innodb_redo_log_capacity': '1G', 'thread_handling': 'one-thread-per-connection'}
    >>> settings(Intent(redo_log="1G", thread_pool=True, thread_pool_size=2), "mariadb", "mariadb-10.11", thread_pool=True)
    {'innodb_log_file_size': '1G', 'thread_handling': 'pool-of-threads', 'thread_pool_size': 2}
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError, ServerError

FAMILIES = ("mariadb", "mysql")
COMPRESSION = ("none", "row", "page")       # table compression kinds (`table_options`)
# page-compression algorithms: MariaDB's innodb_compression_algorithm values (all but zlib
# come from provider plugins on MariaDB ≥ 10.7); MySQL names zlib or lz4 per table
ALGORITHMS = ("zlib", "lz4", "lzo", "lzma", "bzip2", "snappy")
MYSQL_ALGORITHMS = ("zlib", "lz4")
KEY_BLOCK_SIZES = (1, 2, 4, 8, 16)  # KiB: ROW_FORMAT=COMPRESSED's compressed page sizes


class Unavailable(ServerError):
    """The flavour has no such feature (e.g. MySQL community has no thread pool)."""


@dataclass(frozen=True)
class Intent:
    """What a study wants of the server, in words every family understands. None leaves the
    server's default (or the one an earlier intent in `merge` chose)."""
    redo_log: str | None = None          # total redo log size: "512M", "4G"
    buffer_pool: str | None = None       # InnoDB buffer pool size
    flush_method: str | None = None      # innodb_flush_method: O_DIRECT, fsync …
    thread_pool: bool | None = None      # True: pool of threads; False: a thread per connection
    thread_pool_size: int | None = None  # thread groups of the pool (one per server CPU is usual)
    page_compression: str | None = None  # algorithm of page-compressed tables: zlib, lz4 …

    def merge(self, *others: "Intent | None") -> "Intent":
        """This intent with every later one's set fields on top."""
        out = self
        for other in others:
            if other is not None:
                out = dataclasses.replace(out, **{k: v for k, v in dataclasses.asdict(other).items()
                                                  if v is not None})
        return out

    def asdict(self) -> dict[str, Any]:
        """The fields that are set."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


# Every start gets this first (a study's or a start's intent goes on top).
BASE_INTENT = Intent(redo_log="512M")


def settings(intent: Intent, family: str, flavour: str, *, thread_pool: bool,
             providers: bool = False) -> dict[str, Any]:
    """The server variables that say `intent` in `family`'s dialect. `flavour` names the
    server in messages; `thread_pool`: whether it has a (community) thread pool;
    `providers`: whether its compression algorithms but zlib are provider plugins to load
    (MariaDB ≥ 10.7: `plugin_load_add = provider_<algorithm>`)."""
    if family not in FAMILIES:
        raise ServerError(f"flavour {flavour}: unknown family {family!r} (one of {', '.join(FAMILIES)})")
    mysql = family == "mysql"
    out: dict[str, Any] = {}
    if intent.redo_log is not None:
        out["innodb_redo_log_capacity" if mysql else "innodb_log_file_size"] = intent.redo_log
    if intent.buffer_pool is not None:
        out["innodb_buffer_pool_size"] = intent.buffer_pool
    if intent.flush_method is not None:
        out["innodb_flush_method"] = intent.flush_method
    if intent.thread_pool:
        if not thread_pool:
            raise Unavailable(f"the thread pool is not available on {flavour}"
                              + (" (MySQL community has none)" if mysql else ""))
        out["thread_handling"] = "pool-of-threads"
        if intent.thread_pool_size is not None:
            out["thread_pool_size"] = intent.thread_pool_size
    elif intent.thread_pool is False:
        out["thread_handling"] = "one-thread-per-connection"
    algorithm = intent.page_compression
    if algorithm is not None:
        known = MYSQL_ALGORITHMS if mysql else ALGORITHMS
        if algorithm not in known:
            raise Unavailable(f"page compression {algorithm!r} is not available on {flavour}; "
                              f"it knows {', '.join(known)}")
        if not mysql:  # MySQL names the algorithm per table (`table_options`)
            out["innodb_compression_algorithm"] = algorithm
            if providers and algorithm != "zlib":
                out["plugin_load_add"] = provider_plugin(algorithm)
    return out


def provider_plugin(algorithm: str) -> str:
    """MariaDB's plugin providing a compression algorithm (Debian package
    mariadb-plugin-provider-<algorithm>).

    >>> provider_plugin("lz4")
    'provider_lz4'
    """
    return f"provider_{algorithm}"


def table_options(kind: str, family: str, algorithm: str = "zlib", key_block_size: int = 8) -> str:
    """CREATE TABLE options for a compression kind in the family's dialect: "none", "row"
    (ROW_FORMAT=COMPRESSED with `key_block_size` KiB pages, both families) or "page"
    (MariaDB PAGE_COMPRESSED=1 with the server's innodb_compression_algorithm; MySQL
    COMPRESSION='<algorithm>' per table).

    >>> table_options("page", "mysql"), table_options("page", "mariadb")
    ("COMPRESSION='zlib'", 'PAGE_COMPRESSED=1')
    >>> table_options("row", "mariadb", key_block_size=4)
    'ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4'
    """
    if kind not in COMPRESSION:
        raise ConfigError(f"compression {kind!r}: one of {', '.join(COMPRESSION)}")
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"algorithm {algorithm!r}: one of {', '.join(ALGORITHMS)}")
    if key_block_size not in KEY_BLOCK_SIZES:
        raise ConfigError(f"key_block_size {key_block_size!r}: one of {KEY_BLOCK_SIZES}")
    if kind == "row":
        return f"ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE={key_block_size}"
    if kind == "page":
        return f"COMPRESSION='{algorithm}'" if family == "mysql" else "PAGE_COMPRESSED=1"
    return ""


def norm_key(key: str) -> str:
    """my.cnf option names: dashes and underscores are the same; we write underscores."""
    return key.strip().replace("-", "_")


def read_cnf(path: Path) -> dict[str, Any]:
    """Settings of a [mysqld] fragment; a bare key maps to None, a repeated key to a list."""
    out: dict[str, Any] = {}
    for n, raw in enumerate(Path(path).read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith(";"):
            continue
        if line.startswith("["):
            if line not in ("[mysqld]", "[mariadbd]", "[server]"):
                raise ConfigError(f"{path}:{n}: only a [mysqld] section is allowed in fragments")
            continue
        key, _, value = line.partition("=")
        key, value = norm_key(key), (value.strip() if _ else None)
        if key in out:
            prev = out[key]
            out[key] = (prev if isinstance(prev, list) else [prev]) + [value]
        else:
            out[key] = value
    return out


def render_cnf(settings: Mapping[str, Any]) -> str:
    """A [mysqld] section; None → bare option, list → the option repeated, bool → ON/OFF."""
    lines = ["[mysqld]"]
    for key, value in settings.items():
        for v in value if isinstance(value, list) else [value]:
            if v is None:
                lines.append(key)
            elif isinstance(v, bool):
                lines.append(f"{key}={'ON' if v else 'OFF'}")
            else:
                lines.append(f"{key}={v}")
    return "\n".join(lines) + "\n"


