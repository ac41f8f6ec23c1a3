"""my.cnf: fragments read and rendered, and the `Intent` every server is told in its own words.

Studies state *intent* — "a 512 MiB redo log", "the thread pool on", "no binary log",
"utf8mb4" — as an `Intent`; the server's dialect (`dialect.Dialect`, chosen from the family
and version detected from its binary) turns it into that server's own variables. Plain
settings (a dict of variables) still pass through untouched, after the dialect's, for what no
intent covers.

`ALIGNED` is the like-for-like intent: the settings a benchmark must hold equal across
servers, so that two versions differ only in what the version itself brings.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..core.errors import ConfigError

COMPRESSION = ("none", "row", "page")       # table compression kinds (`table_options`)
# page-compression algorithms: MariaDB's innodb_compression_algorithm values (all but zlib
# come from provider plugins on MariaDB ≥ 10.7); MySQL names zlib or lz4 per table
ALGORITHMS = ("zlib", "lz4", "lzo", "lzma", "bzip2", "snappy")
MYSQL_ALGORITHMS = ("zlib", "lz4")
KEY_BLOCK_SIZES = (1, 2, 4, 8, 16)  # KiB: ROW_FORMAT=COMPRESSED's compressed page sizes
ALIGN = ("intent", "defaults")  # like for like (ALIGNED on every server), or each as it ships


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
    # what a benchmark holds equal across servers (`ALIGNED`)
    binlog: bool | None = None           # a binary log (MySQL ≥ 8.0 writes one by default)
    sync_binlog: int | None = None       # fsync the binary log every N commits
    flush_at_commit: int | None = None   # innodb_flush_log_at_trx_commit: 1 durable, 0/2 not
    doublewrite: bool | None = None      # InnoDB's doublewrite buffer
    charset: str | None = None           # the server's character set …
    collation: str | None = None         # … and collation (MySQL 8+ and MariaDB 11 differ)
    io_capacity: int | None = None       # background flushing's I/O budget …
    io_capacity_max: int | None = None   # … and its ceiling
    change_buffering: str | None = None  # none | all | … (MariaDB ≥ 11.0 has no change buffer)
    performance_schema: bool | None = None

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

# Like for like (`align = "intent"`, every study's default): what MariaDB 10.11 and MySQL 9.7
# ship with differently (binary log on and synced per commit in MySQL ≥ 8.0, latin1 vs
# utf8mb4, innodb_io_capacity 200 vs 10000, change buffering …) said the same on every
# server. Values: durable commits, no binary log (its sync would matter only with one), the
# classic I/O capacity, no change buffer (MariaDB ≥ 11.0 has none), no performance_schema,
# base.cnf's buffer pool and flush method. A study's own intent and settings go on top.
ALIGNED = Intent(binlog=False, sync_binlog=1, flush_at_commit=1, doublewrite=True,
                 charset="utf8mb4", collation="utf8mb4_general_ci", io_capacity=200,
                 io_capacity_max=2000, change_buffering="none", performance_schema=False,
                 buffer_pool="2G", flush_method="O_DIRECT")


def base_intent(align: str = "intent") -> Intent:
    """What every start of a run gets before its study's and arm's own intent.

    >>> base_intent("defaults") == BASE_INTENT, base_intent().binlog
    (True, False)
    """
    if align not in ALIGN:
        raise ConfigError(f"align: one of {', '.join(ALIGN)}, got {align!r}")
    return BASE_INTENT.merge(ALIGNED) if align == "intent" else BASE_INTENT


_SIZE_SUFFIX = {"": 1, "K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}


def size_bytes(value: Any) -> int | None:
    """Bytes of a server size setting ("64M", "1G", 1048576), or None when it is not one.

    >>> size_bytes("64M"), size_bytes("1g"), size_bytes(4096), size_bytes("lots")
    (67108864, 1073741824, 4096, None)
    """
    text = str(value).strip().upper()
    number, suffix = (text[:-1], text[-1]) if text[-1:] in _SIZE_SUFFIX else (text, "")
    if not number.isdigit() or isinstance(value, bool):
        return None
    return int(number) * _SIZE_SUFFIX[suffix]


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


