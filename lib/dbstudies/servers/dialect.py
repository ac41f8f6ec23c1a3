"""One config dialect per server family *and version*: what an `Intent` is called on a server.

A variable's name depends on the version, not only the family — MySQL's redo log is
`innodb_log_file_size` × `innodb_log_files_in_group` before 8.0.30 and
`innodb_redo_log_capacity` after; MariaDB ≥ 10.5 has one redo file; MariaDB ≥ 11.0 has no
change buffer; MySQL ≥ 8.0 writes a binary log unless told not to —, so the dialect is
chosen from the family and version *detected from the binary* (`parse_version` of its
`--version` line), and every place that says something to a server asks it.

    >>> big = Intent(redo_log="1G")
    >>> Dialect("mysql", (8, 0, 29)).settings(big)
    {'innodb_log_file_size': '512M', 'innodb_log_files_in_group': 2}
    >>> Dialect("mysql", (8, 0, 30)).settings(big), Dialect("mysql", (9, 7, 4)).settings(big)
    ({'innodb_redo_log_capacity': '1G'}, {'innodb_redo_log_capacity': '1G'})
    >>> Dialect("mariadb", (10, 5, 23)).settings(big), Dialect("mariadb", (11, 8, 6)).settings(big)
    ({'innodb_log_file_size': '1G'}, {'innodb_log_file_size': '1G'})

Like for like (`ALIGNED`): the same intent in each server's words.

    >>> Dialect("mysql", (9, 7, 4)).settings(Intent(binlog=False, change_buffering="none"))
    {'disable_log_bin': None, 'innodb_change_buffering': 'none'}
    >>> Dialect("mariadb", (11, 8, 6)).settings(Intent(binlog=False, change_buffering="none"))
    {}
    >>> Dialect("mariadb", (10, 5, 23)).settings(Intent(binlog=False, change_buffering="none"))
    {'innodb_change_buffering': 'none'}
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..core.errors import ConfigError, ServerError
from .cnf import ALGORITHMS, COMPRESSION, KEY_BLOCK_SIZES, MYSQL_ALGORITHMS, Intent, size_bytes

FAMILIES = ("mariadb", "mysql")


class Unavailable(ServerError):
    """The flavour has no such feature (e.g. MySQL community has no thread pool)."""


@dataclass(frozen=True)
class Detected:
    """What a server binary's `--version` line says it is."""
    family: str                 # mariadb | mysql
    version: tuple[int, int, int]
    variant: str                # "" | "percona"
    text: str                   # the line itself, as printed

    @property
    def release(self) -> str:
        return ".".join(map(str, self.version))


_VER = re.compile(r"\bVer\s+(\d+)\.(\d+)\.(\d+)(\S*)(.*)$")


def parse_version(text: str) -> Detected | None:
    """The family, version and variant in a server's `--version` output; None when it has
    no `Ver X.Y.Z` (not a MySQL-family server, or an unknown format).

    >>> def said(text):
    ...     d = parse_version(text)
    ...     return d and (d.family, d.release, d.variant)
    >>> said("/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64")
    ('mariadb', '10.11.19', '')
    >>> said("/usr/sbin/mysqld  Ver 9.7.4-1 for Linux on x86_64 ((Debian))")
    ('mysql', '9.7.4', '')
    >>> said("bin/mysqld  Ver 8.0.36-28 for Linux on x86_64 (Percona Server (GPL), Release 28)")
    ('mysql', '8.0.36', 'percona')
    >>> said("mysqld  Ver 5.5.5-10.1.48-MariaDB for linux"), said("hello")
    (('mariadb', '10.1.48', ''), None)
    """
    for line in text.splitlines():
        m = _VER.search(line)
        if not m:
            continue
        suffix, rest = m.group(4), m.group(5)
        if "mariadb" in suffix.lower():
            family = "mariadb"
            # MariaDB 10.x once printed a 5.5.5- prefix for old clients: the real version follows
            real = re.match(r"-(\d+)\.(\d+)\.(\d+)-MariaDB", suffix)
            numbers = real.groups() if real and m.group(1) == "5" else m.groups()[:3]
        else:
            family, numbers = "mysql", m.groups()[:3]
        variant = "percona" if "percona" in (suffix + rest).lower() else ""
        return Detected(family, tuple(int(n) for n in numbers), variant, line.strip())
    return None


@dataclass(frozen=True)
class Dialect:
    """How one server family and version says things. `version` () is unknown (a server not
    yet runnable): the newest behaviour is assumed, and the start, once the binary runs, says
    it again from the detected version."""
    family: str
    version: tuple[int, ...] = ()
    variant: str = ""

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ServerError(f"unknown server family {self.family!r} (one of {', '.join(FAMILIES)})")

    @property
    def release(self) -> str:
        """The version as people write it ("11.8.6"; "unknown" before the binary ran)."""
        return ".".join(map(str, self.version)) or "unknown"

    def at_least(self, *version: int) -> bool:
        return not self.version or tuple(self.version) >= version

    @property
    def mysql(self) -> bool:
        return self.family == "mysql"

    # -- facts a caller branches on, named by what they are, not by the family
    @property
    def one_redo_capacity(self) -> bool:
        """The redo log is one size variable (MySQL ≥ 8.0.30 capacity, MariaDB ≥ 10.5 one file)."""
        return self.at_least(8, 0, 30) if self.mysql else self.at_least(10, 5)

    @property
    def redo_variable(self) -> str:
        return "innodb_redo_log_capacity" if self.mysql and self.one_redo_capacity else "innodb_log_file_size"

    @property
    def has_change_buffer(self) -> bool:
        return self.mysql or not self.at_least(11, 0)

    @property
    def binlog_by_default(self) -> bool:
        return self.mysql and self.at_least(8, 0)

    @property
    def provider_plugins(self) -> bool:
        """Compression algorithms but zlib come from provider plugins (MariaDB ≥ 10.7)."""
        return not self.mysql and self.at_least(10, 7)

    @property
    def algorithm_per_table(self) -> bool:
        """Page compression names its algorithm per table (MySQL), not per server (MariaDB)."""
        return self.mysql

    @property
    def dictionary(self) -> str:
        """information_schema's view of InnoDB tables: INNODB_TABLES (MySQL ≥ 8.0) or
        INNODB_SYS_TABLES (MariaDB, MySQL 5.7)."""
        return "INNODB_TABLES" if self.mysql and self.at_least(8, 0) else "INNODB_SYS_TABLES"

    @property
    def algorithms(self) -> tuple[str, ...]:
        return MYSQL_ALGORITHMS if self.mysql else ALGORITHMS

    @property
    def initialize(self) -> bool:
        """The server creates its own datadir (`--initialize-insecure`), no install-db script."""
        return self.mysql and self.at_least(5, 7)

    # -- what an intent is called
    def settings(self, intent: Intent, flavour: str = "this server", *, thread_pool: bool = True,
                 providers: bool | None = None) -> dict[str, Any]:
        """The server variables that say `intent` here. `flavour` names the server in
        messages; `thread_pool`: whether the binary has a thread pool (detected from its
        `--verbose --help`); `providers`: whether algorithms but zlib are plugins to load
        (default: by version)."""
        out: dict[str, Any] = {}
        if intent.redo_log is not None:
            out.update(self._redo(intent.redo_log))
        for field, name in _SAME_NAME.items():
            value = getattr(intent, field)
            if value is not None:
                out[name] = value
        if intent.binlog is True:
            out.update(log_bin="binlog", server_id=1)
        elif intent.binlog is False and self.binlog_by_default:
            out["disable_log_bin"] = None
        if intent.change_buffering is not None:
            if self.has_change_buffer:
                out["innodb_change_buffering"] = intent.change_buffering
            elif intent.change_buffering != "none":
                raise Unavailable(f"{flavour} has no change buffer (MariaDB ≥ 11.0): "
                                  f"change_buffering={intent.change_buffering!r} cannot be said")
        out.update(self._thread_pool(intent, flavour, thread_pool))
        out.update(self._page_compression(intent.page_compression, flavour,
                                          self.provider_plugins if providers is None else providers))
        return out

    def _redo(self, total: str) -> dict[str, Any]:
        if self.one_redo_capacity:
            return {self.redo_variable: total}
        size = size_bytes(total)
        if size is None:
            raise ConfigError(f"redo_log: a size such as 512M, got {total!r}")
        return {"innodb_log_file_size": _size_text(size // 2), "innodb_log_files_in_group": 2}

    def _thread_pool(self, intent: Intent, flavour: str, available: bool) -> dict[str, Any]:
        if intent.thread_pool:
            if not available:
                raise Unavailable(f"the thread pool is not available on {flavour}"
                                  + (" (MySQL community has none)" if self.mysql and not self.variant else ""))
            out: dict[str, Any] = {"thread_handling": "pool-of-threads"}
            if intent.thread_pool_size is not None:
                out["thread_pool_size"] = intent.thread_pool_size
            return out
        return {"thread_handling": "one-thread-per-connection"} if intent.thread_pool is False else {}

    def _page_compression(self, algorithm: str | None, flavour: str, providers: bool) -> dict[str, Any]:
        if algorithm is None:
            return {}
        if algorithm not in self.algorithms:
            raise Unavailable(f"page compression {algorithm!r} is not available on {flavour}; "
                              f"it knows {', '.join(self.algorithms)}")
        if self.algorithm_per_table:  # said per table (`table_options`)
            return {}
        out: dict[str, Any] = {"innodb_compression_algorithm": algorithm}
        if providers and algorithm != "zlib":
            out["plugin_load_add"] = provider_plugin(algorithm)
        return out

    def table_options(self, kind: str, algorithm: str = "zlib", key_block_size: int = 8) -> str:
        """CREATE TABLE options for a compression kind: "none", "row" (ROW_FORMAT=COMPRESSED
        with `key_block_size` KiB pages) or "page" (MariaDB PAGE_COMPRESSED=1 with the
        server's algorithm; MySQL COMPRESSION='<algorithm>' per table).

        >>> Dialect("mysql").table_options("page"), Dialect("mariadb").table_options("page")
        ("COMPRESSION='zlib'", 'PAGE_COMPRESSED=1')
        >>> Dialect("mariadb").table_options("row", key_block_size=4)
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
            return f"COMPRESSION='{algorithm}'" if self.algorithm_per_table else "PAGE_COMPRESSED=1"
        return ""

    def with_timeout(self, sql: str, seconds: float) -> list[str]:
        """The statements that run `sql` with a server-side limit: MariaDB `SET STATEMENT
        max_statement_time=N FOR …`; MySQL the session's max_execution_time (ms, SELECT) first.

        >>> Dialect("mariadb").with_timeout("SELECT 1", 2.5)
        ['SET STATEMENT max_statement_time=2.5 FOR SELECT 1']
        >>> Dialect("mysql").with_timeout("SELECT 1", 2.5)
        ['SET SESSION max_execution_time=2500', 'SELECT 1']
        """
        if self.mysql:
            return [f"SET SESSION max_execution_time={max(1, round(seconds * 1000))}", sql]
        return [f"SET STATEMENT max_statement_time={seconds:g} FOR {sql}"]

    def explain_prelude(self) -> list[str]:
        """What a session says before EXPLAIN FORMAT=JSON so that every server writes the
        nested query blocks (MySQL ≥ 8.3 defaults to its iterator tree: version 1 asked)."""
        return ["SET SESSION explain_json_format_version=1"] if self.mysql and self.at_least(8, 3) else []


# intent fields whose variable has the same name on every server we know
_SAME_NAME = {"buffer_pool": "innodb_buffer_pool_size", "flush_method": "innodb_flush_method",
              "sync_binlog": "sync_binlog", "flush_at_commit": "innodb_flush_log_at_trx_commit",
              "doublewrite": "innodb_doublewrite", "charset": "character_set_server",
              "collation": "collation_server", "io_capacity": "innodb_io_capacity",
              "io_capacity_max": "innodb_io_capacity_max", "performance_schema": "performance_schema"}

# the global variable that shows each aligned intent field on a running server
SHOWN_AS = {**_SAME_NAME, "binlog": "log_bin", "change_buffering": "innodb_change_buffering"}


def provider_plugin(algorithm: str) -> str:
    """MariaDB's plugin providing a compression algorithm (Debian package
    mariadb-plugin-provider-<algorithm>).

    >>> provider_plugin("lz4")
    'provider_lz4'
    """
    return f"provider_{algorithm}"


def _size_text(size: int) -> str:
    """Bytes as my.cnf writes them, in the largest exact unit.

    >>> _size_text(2**29), _size_text(1000)
    ('512M', '1000')
    """
    for suffix, unit in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)
