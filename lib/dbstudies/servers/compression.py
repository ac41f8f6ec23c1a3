"""Compressed InnoDB tables: the format a study asks for, what the server really made of its
tables (information_schema), their footprint on disk, and the server's compression counters.

A format is written `none`, `page:<algorithm>` (page compression: MariaDB PAGE_COMPRESSED=1
with innodb_compression_algorithm, MySQL COMPRESSION='<algorithm>') or `row:<KiB>`
(ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=<KiB>). Asking is not having: `verify` reads the
server's own dictionary and raises when a table is not in the format asked for, so a
"compressed" result can never come from uncompressed tables.

    >>> f = parse("page:lz4")
    >>> f.label, f.intent().page_compression, f.table_options(Dialect("mariadb"))
    ('page:lz4', 'lz4', 'PAGE_COMPRESSED=1')
    >>> parse("row:8").table_options(Dialect("mariadb"))
    'ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8'
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ServerError
from .cnf import ALGORITHMS, KEY_BLOCK_SIZES, Intent
from .dialect import Dialect

if TYPE_CHECKING:
    from .flavour import Flavour
    from .instance import Server

# MariaDB's page-compression algorithm numbers (a full_crc32 tablespace keeps the one its
# pages were compressed with in bits 5–7 of its flags)
ALGORITHM_IDS = {1: "zlib", 2: "lz4", 3: "lzo", 4: "lzma", 5: "bzip2", 6: "snappy"}
_PAGE_COMPRESSED_BIT, _LEVEL_SHIFT = 7, 8        # InnoDB table flags (SYS_TABLES.FLAG)
_FCRC32_MARKER, _FCRC32_ALGO_SHIFT = 1 << 4, 5   # tablespace flags (full_crc32 format)
# the server's counters of page compression (MariaDB) …
COUNTERS = ("Innodb_page_compression_saved", "Innodb_num_pages_page_compressed",
            "Innodb_num_pages_page_decompressed", "Innodb_num_page_compressed_trim_op",
            "Innodb_num_pages_page_compression_error")
# … and of row compression (information_schema.INNODB_CMP, summed over page sizes)
CMP_COUNTERS = ("compress_ops", "compress_ops_ok", "compress_time", "uncompress_ops",
                "uncompress_time")


@dataclass(frozen=True)
class Format:
    """One table format: kind none | page | row, the page algorithm or the row key block size."""
    kind: str
    algorithm: str | None = None
    key_block_size: int | None = None

    @property
    def label(self) -> str:
        if self.kind == "page":
            return f"page:{self.algorithm}"
        return f"row:{self.key_block_size}" if self.kind == "row" else "none"

    def intent(self) -> Intent | None:
        """What the server must be started with (page compression's algorithm), or None."""
        return Intent(page_compression=self.algorithm) if self.kind == "page" else None

    def table_options(self, dialect: Dialect) -> str:
        """CREATE TABLE options saying this format in a server's dialect."""
        return dialect.table_options(self.kind, self.algorithm or "zlib", self.key_block_size or 8)


def parse(spec: str) -> Format:
    """The format `spec` names; ValueError saying what is wrong and what is known.

    >>> parse("page:zstd")
    Traceback (most recent call last):
    ...
    ValueError: 'page:zstd': unknown page-compression algorithm 'zstd'; known: zlib, lz4, lzo, lzma, bzip2, snappy
    """
    kind, _, arg = str(spec).partition(":")
    if kind == "none" and not arg:
        return Format("none")
    if kind == "page":
        if arg not in ALGORITHMS:
            raise ValueError(f"{spec!r}: unknown page-compression algorithm {arg!r}; known: "
                             f"{', '.join(ALGORITHMS)}")
        return Format("page", algorithm=arg)
    if kind == "row":
        if not arg.isdigit() or int(arg) not in KEY_BLOCK_SIZES:
            raise ValueError(f"{spec!r}: row compression needs a KEY_BLOCK_SIZE in KiB, one of "
                             f"{', '.join(map(str, KEY_BLOCK_SIZES))}")
        return Format("row", key_block_size=int(arg))
    raise ValueError(f"{spec!r}: not a table format; write none, page:<algorithm> "
                     f"(e.g. page:zlib) or row:<KiB> (e.g. row:8)")


def problems(spec: str, flavour: "Flavour") -> list[str]:
    """Why `flavour` cannot make tables of format `spec` (an unknown format, an algorithm
    it lacks, a provider plugin not installed), before anything starts; [] when it can."""
    try:
        fmt = parse(spec)
    except ValueError as e:
        return [str(e)]
    intent = fmt.intent()
    why = flavour.unavailable(intent) if intent else None
    return [f"{spec!r}: {why}"] if why else []


# ---------------------------------------------------------------- what the server made

def table_formats(server: "Server", db: str) -> list[dict[str, Any]]:
    """Every InnoDB table of `db` as the server's dictionary describes it: table, row_format,
    zip_kib (row compression's page size, 0: none), page_compressed, level, algorithm (of
    page-compressed tables: from the tablespace flags, else the server's current one)."""
    if server.flavour.dialect.dictionary == "INNODB_TABLES":
        return _mysql_formats(server, db)
    rows = server.query(
        "SELECT t.NAME, t.FLAG, t.ROW_FORMAT, t.ZIP_PAGE_SIZE, s.FLAG "
        "FROM information_schema.INNODB_SYS_TABLES t "
        "LEFT JOIN information_schema.INNODB_SYS_TABLESPACES s ON s.SPACE = t.SPACE "
        f"WHERE t.NAME LIKE '{db}/%' ORDER BY t.NAME")
    current = server.query("SELECT @@innodb_compression_algorithm")[0][0]
    out = []
    for name, flag, row_format, zip_size, space_flag in rows:
        page = bool(int(flag) >> _PAGE_COMPRESSED_BIT & 1)
        algorithm = None
        if page:
            space_flag = int(space_flag or 0)
            algorithm = (ALGORITHM_IDS.get(space_flag >> _FCRC32_ALGO_SHIFT & 7)
                         if space_flag & _FCRC32_MARKER else current)
        out.append({"table": name.split("/", 1)[1], "row_format": row_format,
                    "zip_kib": int(zip_size) // 1024, "page_compressed": page,
                    "level": int(flag) >> _LEVEL_SHIFT & 15 if page else None,
                    "algorithm": algorithm})
    return out


def _mysql_formats(server: "Server", db: str) -> list[dict[str, Any]]:
    rows = server.query(
        "SELECT t.TABLE_NAME, i.ROW_FORMAT, i.ZIP_PAGE_SIZE, t.CREATE_OPTIONS "
        "FROM information_schema.TABLES t JOIN information_schema.INNODB_TABLES i "
        "ON i.NAME = CONCAT(t.TABLE_SCHEMA, '/', t.TABLE_NAME) "
        f"WHERE t.TABLE_SCHEMA = '{db}' ORDER BY t.TABLE_NAME")
    out = []
    for name, row_format, zip_size, options in rows:
        algorithm = next((a for a in ALGORITHMS if f'COMPRESSION="{a}"'.lower() in (options or "").lower()), None)
        out.append({"table": name, "row_format": row_format, "zip_kib": int(zip_size) // 1024,
                    "page_compressed": algorithm is not None, "level": None, "algorithm": algorithm})
    return out


def mismatches(fmt: Format, tables: list[dict[str, Any]]) -> list[str]:
    """What differs between format `fmt` and the tables as the server describes them.

    >>> t = {"table": "t", "row_format": "Dynamic", "zip_kib": 0, "page_compressed": False,
    ...      "level": None, "algorithm": None}
    >>> mismatches(parse("none"), [t]), mismatches(parse("row:8"), [t])
    ([], ['t: asked for row:8, the server has it Dynamic, not page-compressed'])
    """
    out = []
    for t in tables:
        have = (t["row_format"] == "Compressed" and (fmt.kind, t["zip_kib"]) == ("row", fmt.key_block_size)
                and not t["page_compressed"]) if fmt.kind == "row" else (
            t["page_compressed"] and t["row_format"] != "Compressed" and t["algorithm"] == fmt.algorithm
            if fmt.kind == "page" else t["row_format"] != "Compressed" and not t["page_compressed"])
        if not have:
            said = (f"{t['row_format']}" + (f" {t['zip_kib']} KiB" if t["zip_kib"] else "")
                    + (f", page-compressed with {t['algorithm']}" if t["page_compressed"]
                       else ", not page-compressed"))
            out.append(f"{t['table']}: asked for {fmt.label}, the server has it {said}")
    return out


def check_available(server: "Server", fmt: Format) -> None:
    """ServerError unless the running server can page-compress with `fmt`'s algorithm
    (MariaDB's Innodb_have_<algorithm>; its current innodb_compression_algorithm): asked
    before a load, for what the flavour's files could not tell (an algorithm built in or not)."""
    if fmt.kind != "page" or server.flavour.dialect.algorithm_per_table:
        return
    have = dict(server.query(f"SHOW GLOBAL STATUS LIKE 'Innodb_have_{fmt.algorithm}'"))
    if have and have.get(f"Innodb_have_{fmt.algorithm}") != "ON":
        raise ServerError(f"{server.flavour.name} has no {fmt.algorithm} compression "
                          f"(Innodb_have_{fmt.algorithm} is OFF)")
    current = server.query("SELECT @@innodb_compression_algorithm")[0][0]
    if current != fmt.algorithm:
        raise ServerError(f"{server.flavour.name} runs with innodb_compression_algorithm "
                          f"{current}, not {fmt.algorithm}")


def verify(server: "Server", db: str, fmt: Format) -> list[dict[str, Any]]:
    """The tables of `db` (`table_formats`), after checking every one is in format `fmt`
    (and, for page compression, that the server has the algorithm); ServerError otherwise."""
    check_available(server, fmt)
    tables = table_formats(server, db)
    if not tables:
        raise ServerError(f"no InnoDB tables in {db} to verify as {fmt.label}")
    wrong = mismatches(fmt, tables)
    if wrong:
        raise ServerError(f"tables are not in the format asked for ({fmt.label}):\n  "
                          + "\n  ".join(wrong))
    return tables


# ---------------------------------------------------------------- footprint and counters

def footprint(server: "Server", db: str) -> list[dict[str, Any]]:
    """Per table file of `db` (file-per-table .ibd): apparent bytes (st_size, what `ls`
    shows), allocated bytes (st_blocks × 512, what `du` shows: page compression punches
    holes, so only this one shrinks) and InnoDB's free space in it (`free_space`: extents
    preallocated and never written, counted in both)."""
    free = free_space(server, db)
    out = []
    for f in sorted((Path(server.datadir) / db).glob("*.ibd")):
        with contextlib.suppress(FileNotFoundError):
            st = os.stat(f)
            out.append({"table": f.stem, "apparent_bytes": st.st_size,
                        "allocated_bytes": st.st_blocks * 512, "free_bytes": free.get(f.stem, 0)})
    return out


def free_space(server: "Server", db: str) -> dict[str, int]:
    """Per table of `db`: the free space InnoDB reports in its tablespace (DATA_FREE: whole
    free extents), read fresh (MySQL caches information_schema statistics unless its
    session says otherwise; nothing is read into the buffer pool)."""
    with server.connect() as c:
        cur = c.cursor()
        with contextlib.suppress(Exception):  # MySQL only; MariaDB computes it on every read
            cur.execute("SET SESSION information_schema_stats_expiry = 0")
        cur.execute("SELECT table_name, data_free FROM information_schema.TABLES WHERE table_schema = %s", (db,))
        rows = cur.fetchall()
        cur.close()
    return {str(t): int(f or 0) for t, f in rows}


ROW_COUNTERS = ("Handler_write", "Handler_update", "Handler_delete")  # rows written, changed


def counters(server: "Server") -> dict[str, float]:
    """The server's counters now: rows written, updated and deleted (the SQL layer's), page
    compression's status variables and row compression's INNODB_CMP sums (zero where the
    server has none)."""
    names = ",".join(f"'{v}'" for v in (*ROW_COUNTERS, *COUNTERS))
    out = {name: float(v) for name, v in server.query(
        f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})")}
    sums = ",".join(f"COALESCE(SUM({c}), 0)" for c in CMP_COUNTERS)
    with contextlib.suppress(Exception):  # a server without INNODB_CMP keeps the status ones
        row = server.query(f"SELECT {sums} FROM information_schema.INNODB_CMP")[0]
        out.update({f"cmp_{c}": float(v) for c, v in zip(CMP_COUNTERS, row)})
    return out
