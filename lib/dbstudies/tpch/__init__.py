"""TPC-H data, schema and queries for the DBT3 power test.

- `generate(sf)`: the eight tables as `|`-separated files under data/tpch/sf<N>/, made
  offline by DuckDB's tpch extension (a PyPI package; no download at run time), once: a
  manifest with every file's SHA-256 is written last and checked on reuse.
- `load(server, sf, engine)`: CREATE the tables (the specification's columns, primary keys),
  LOAD DATA LOCAL INFILE each file, then the secondary indexes DBT3 adds (foreign keys and
  dates), then ANALYZE; the seconds of every table's load and index build are returned.
  Tables load in parallel (`workers` connections, biggest first: lineitem alone is ~70 % of
  the bytes, so two workers load everything else while it loads).
- `queries()`: the 22 queries (`queries/qNN.sql`, the specification's texts with its
  validation parameters, in the MariaDB/MySQL dialect).
- `answers(sf)` / `check(n, rows, sf)`: DuckDB's reference answers, for SF 0.01, 0.1 and 1
  on DuckDB-generated data; numbers compared to the precision the specification asks.
"""
from __future__ import annotations

import functools
import json
import math
import os
import shutil
import time
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Iterable

from ..core import paths
from ..core.errors import WorkloadError

TPCH_DIR = paths.DATA_DIR / "tpch"
QUERIES_DIR = Path(__file__).with_name("queries")
ANSWER_SCALES = (0.01, 0.1, 1.0)
ENGINES = ("InnoDB", "MyISAM", "Aria")

# the specification's tables, smallest first (the order they are loaded in)
SCHEMA: dict[str, tuple[str, str]] = {  # table → (columns, primary key)
    "region": ("r_regionkey INT NOT NULL, r_name CHAR(25) NOT NULL, r_comment VARCHAR(152) NOT NULL",
               "r_regionkey"),
    "nation": ("n_nationkey INT NOT NULL, n_name CHAR(25) NOT NULL, n_regionkey INT NOT NULL, "
               "n_comment VARCHAR(152) NOT NULL", "n_nationkey"),
    "supplier": ("s_suppkey INT NOT NULL, s_name CHAR(25) NOT NULL, s_address VARCHAR(40) NOT NULL, "
                 "s_nationkey INT NOT NULL, s_phone CHAR(15) NOT NULL, s_acctbal DECIMAL(15,2) NOT NULL, "
                 "s_comment VARCHAR(101) NOT NULL", "s_suppkey"),
    "customer": ("c_custkey INT NOT NULL, c_name VARCHAR(25) NOT NULL, c_address VARCHAR(40) NOT NULL, "
                 "c_nationkey INT NOT NULL, c_phone CHAR(15) NOT NULL, c_acctbal DECIMAL(15,2) NOT NULL, "
                 "c_mktsegment CHAR(10) NOT NULL, c_comment VARCHAR(117) NOT NULL", "c_custkey"),
    "part": ("p_partkey INT NOT NULL, p_name VARCHAR(55) NOT NULL, p_mfgr CHAR(25) NOT NULL, "
             "p_brand CHAR(10) NOT NULL, p_type VARCHAR(25) NOT NULL, p_size INT NOT NULL, "
             "p_container CHAR(10) NOT NULL, p_retailprice DECIMAL(15,2) NOT NULL, "
             "p_comment VARCHAR(23) NOT NULL", "p_partkey"),
    "partsupp": ("ps_partkey INT NOT NULL, ps_suppkey INT NOT NULL, ps_availqty INT NOT NULL, "
                 "ps_supplycost DECIMAL(15,2) NOT NULL, ps_comment VARCHAR(199) NOT NULL",
                 "ps_partkey, ps_suppkey"),
    "orders": ("o_orderkey BIGINT NOT NULL, o_custkey INT NOT NULL, o_orderstatus CHAR(1) NOT NULL, "
               "o_totalprice DECIMAL(15,2) NOT NULL, o_orderdate DATE NOT NULL, "
               "o_orderpriority CHAR(15) NOT NULL, o_clerk CHAR(15) NOT NULL, "
               "o_shippriority INT NOT NULL, o_comment VARCHAR(79) NOT NULL", "o_orderkey"),
    "lineitem": ("l_orderkey BIGINT NOT NULL, l_partkey INT NOT NULL, l_suppkey INT NOT NULL, "
                 "l_linenumber INT NOT NULL, l_quantity DECIMAL(15,2) NOT NULL, "
                 "l_extendedprice DECIMAL(15,2) NOT NULL, l_discount DECIMAL(15,2) NOT NULL, "
                 "l_tax DECIMAL(15,2) NOT NULL, l_returnflag CHAR(1) NOT NULL, "
                 "l_linestatus CHAR(1) NOT NULL, l_shipdate DATE NOT NULL, l_commitdate DATE NOT NULL, "
                 "l_receiptdate DATE NOT NULL, l_shipinstruct CHAR(25) NOT NULL, "
                 "l_shipmode CHAR(10) NOT NULL, l_comment VARCHAR(44) NOT NULL",
                 "l_orderkey, l_linenumber"),
}
# secondary indexes, added after the load: every foreign key and the dates queries filter on
INDEXES: dict[str, list[str]] = {
    "nation": ["n_regionkey"], "supplier": ["s_nationkey"], "customer": ["c_nationkey"],
    "partsupp": ["ps_suppkey"], "orders": ["o_custkey", "o_orderdate"],
    "lineitem": ["l_partkey, l_suppkey", "l_suppkey", "l_shipdate", "l_commitdate",
                 "l_receiptdate"],
}


class GeneratorMissing(WorkloadError):
    """DuckDB or its tpch extension package is not installed."""


# ---------------------------------------------------------------- data

def sf_name(sf: float) -> str:
    """'0.01' → 'sf0.01', 1.0 → 'sf1' (the cache directory's name).

    >>> sf_name(0.01), sf_name(1.0), sf_name(10)
    ('sf0.01', 'sf1', 'sf10')
    """
    return f"sf{float(sf):g}"


def _extension() -> Path:
    try:
        import duckdb  # noqa: F401
        import duckdb_extension_tpch
    except ImportError as e:
        raise GeneratorMissing(f"the TPC-H generator needs the Python packages duckdb and "
                               f"duckdb-extension-tpch ({e.name} is missing; `make setup` "
                               "installs them from environment.yml)") from None
    found = sorted(Path(duckdb_extension_tpch.__file__).parent.rglob("tpch.duckdb_extension"))
    if not found:
        raise GeneratorMissing("duckdb-extension-tpch holds no tpch.duckdb_extension file")
    return found[-1]


def generator_available() -> None:
    """Raise GeneratorMissing unless DuckDB and its tpch extension package are installed."""
    _extension()


def _duckdb():
    import duckdb
    con = duckdb.connect()
    con.execute(f"LOAD '{_extension()}'")
    return con


def generate(sf: float, root: Path = TPCH_DIR, say: Callable[[str], None] = print) -> Path:
    """The eight tables at scale factor `sf` as <table>.tbl files (made once, then reused
    after checking every file against the manifest)."""
    folder = Path(root) / sf_name(sf)
    manifest = folder / "manifest.json"
    if manifest.exists():
        verify(folder)
        return folder
    con = _duckdb()
    part = folder.with_name(folder.name + ".part")
    shutil.rmtree(part, ignore_errors=True)
    part.mkdir(parents=True)
    t0 = time.monotonic()
    say(f"generating TPC-H data at scale factor {sf:g} (once; cached in {folder})")
    con.execute(f"CALL dbgen(sf={float(sf)})")
    files = {}
    for table in SCHEMA:
        path = part / f"{table}.tbl"
        con.execute(f"COPY {table} TO '{path}' (FORMAT csv, DELIMITER '|', HEADER false)")
        files[path.name] = {"sha256": paths.sha256(path), "bytes": path.stat().st_size,
                            "rows": con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]}
    (part / "manifest.json").write_text(json.dumps(
        {"scale_factor": float(sf), "generator": f"duckdb {_duckdb_version()} tpch dbgen",
         "seconds": round(time.monotonic() - t0, 1), "files": files}, indent=2) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(part, folder)
    say(f"generated SF {sf:g} in {time.monotonic() - t0:.0f} s "
        f"({sum(f['bytes'] for f in files.values()) / 2**20:.0f} MiB)")
    return folder


def _duckdb_version() -> str:
    import duckdb
    return duckdb.__version__


def verify(folder: Path) -> dict[str, Any]:
    """The manifest, after checking that every file it lists is there, whole and unchanged."""
    manifest = json.loads((Path(folder) / "manifest.json").read_text())
    for name, facts in manifest["files"].items():
        path = Path(folder) / name
        if not path.exists() or path.stat().st_size != facts["bytes"] or paths.sha256(path) != facts["sha256"]:
            raise WorkloadError(f"{path} is missing or differs from {folder}/manifest.json: delete "
                                f"{folder}; the next use generates it again")
    return manifest


# ---------------------------------------------------------------- load

LOAD_OPTIONS = "FIELDS TERMINATED BY '|' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\n'"


def index_ddl(table: str) -> str | None:
    """The one ALTER TABLE that adds `table`'s secondary indexes (None: it has none)."""
    indexes = INDEXES.get(table, [])
    if not indexes:
        return None
    return f"ALTER TABLE {table} " + ", ".join(f"ADD INDEX i_{table}_{i} ({cols})"
                                               for i, cols in enumerate(indexes))


def load(server: Any, folder: Path, *, engine: str = "InnoDB", db: str = "tpch",
         say: Callable[[str], None] = print, workers: int | None = None) -> list[dict[str, Any]]:
    """Create `db`, load every table of `folder` (primary keys first, then the data, then the
    secondary indexes), ANALYZE them; `workers` tables at a time (default: 2, or 1 on one
    CPU), biggest first. Returns per table, in SCHEMA order: rows, load and index seconds
    (tables loading side by side share the machine: the seconds are each table's own wall
    time, not a share of the total)."""
    from concurrent.futures import ThreadPoolExecutor, as_completed
    if engine not in ENGINES:
        raise WorkloadError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    manifest = verify(folder)
    with server.connect() as c:
        cur = c.cursor()
        cur.execute(f"DROP DATABASE IF EXISTS `{db}`")
        cur.execute(f"CREATE DATABASE `{db}`")
        cur.close()
    order = sorted(SCHEMA, key=lambda t: -manifest["files"][f"{t}.tbl"]["bytes"])
    workers = workers or min(2, len(os.sched_getaffinity(0)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tpch-load") as pool:
        futures = {t: pool.submit(_load_table, server, Path(folder), db, t, engine,
                                  manifest["files"][f"{t}.tbl"]["rows"]) for t in order}
        try:
            for f in as_completed(futures.values()):
                t = f.result()  # the first failure ends the load
                say(f"loaded {t['table']}: {t['rows']:,} rows in {t['load_s']:.1f} s, "
                    f"indexes in {t['index_s']:.1f} s")
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)  # tables not started are not
            raise
    return [futures[t].result() for t in SCHEMA]


def _load_table(server: Any, folder: Path, db: str, table: str, engine: str,
                expected: int) -> dict[str, Any]:
    """One table on its own connection: CREATE, LOAD DATA (the rows it reports checked
    against the manifest), the secondary indexes, ANALYZE."""
    columns, key = SCHEMA[table]
    with server.connect(database=db, allow_local_infile=True,
                        allow_local_infile_in_path=str(folder)) as c:
        cur = c.cursor()
        cur.execute(f"CREATE TABLE {table} ({columns}, PRIMARY KEY ({key})) ENGINE={engine}")
        t0 = time.monotonic()
        cur.execute(f"LOAD DATA LOCAL INFILE '{folder / (table + '.tbl')}' INTO TABLE {table} {LOAD_OPTIONS}")
        loaded, rows = time.monotonic() - t0, cur.rowcount
        if rows != expected:
            raise WorkloadError(f"loaded {rows} rows into {table}, the file holds {expected}")
        t1 = time.monotonic()
        ddl = index_ddl(table)
        if ddl:
            cur.execute(ddl)
        indexed = time.monotonic() - t1
        cur.execute(f"ANALYZE TABLE {table}")
        cur.fetchall()
        cur.close()
    return {"table": table, "rows": rows, "load_s": loaded, "index_s": indexed}


# ---------------------------------------------------------------- queries and answers

def queries() -> dict[int, str]:
    """Query number → its SQL text (comments kept, one statement, no trailing ';')."""
    return dict(_query_texts())


@functools.cache
def _query_texts() -> tuple[tuple[int, str], ...]:  # read once: a study asks per execution
    return tuple((int(p.stem[1:]), p.read_text().strip().rstrip(";"))
                 for p in sorted(QUERIES_DIR.glob("q*.sql")))


def answers(sf: float) -> dict[int, tuple[list[str], list[list[str]]]]:
    """DuckDB's reference answers at `sf`: query → (column names, rows as text)."""
    if not any(math.isclose(float(sf), a) for a in ANSWER_SCALES):
        raise WorkloadError(f"there are reference answers for scale factors "
                            f"{', '.join(f'{a:g}' for a in ANSWER_SCALES)} only, not {sf:g}: "
                            "the results cannot be checked at this scale")
    con = _duckdb()
    out = {}
    for n, text in con.execute("SELECT query_nr, answer FROM tpch_answers() WHERE scale_factor = ?",
                               [float(sf)]).fetchall():
        header, *lines = text.removesuffix("\n").split("\n")  # "avg_yearly\n\n": one NULL row
        out[int(n)] = (header.split("|"), [ln.split("|") for ln in lines])
    return out


def same(value: Any, expected: str) -> bool:
    """A result cell against its reference text: numbers within 0.01 or 1e-4 relative (the
    servers round averages to a few decimals), text exactly (CHAR padding ignored).

    >>> same(Decimal("0.0501"), "0.05008133906964238"), same("A", "A"), same(5, "6")
    (True, True, False)
    """
    if value is None:
        return expected in ("", "NULL")
    if isinstance(value, (int, float, Decimal)):
        try:
            e = float(expected)
        except ValueError:
            return False
        return abs(float(value) - e) <= max(0.01, 1e-4 * abs(e))
    return str(value).rstrip() == expected.rstrip()


def check(n: int, rows: Iterable[tuple], reference: tuple[list[str], list[list[str]]]) -> list[str]:
    """Differences between a query's rows and its reference answer (empty: it matches)."""
    rows = list(rows)
    _, expected = reference
    if len(rows) != len(expected):
        return [f"Q{n}: {len(rows)} rows, the reference has {len(expected)}"]
    problems = []
    for i, (got, want) in enumerate(zip(rows, expected)):
        bad = [j for j, (g, w) in enumerate(zip(got, want)) if not same(g, w)]
        if len(got) != len(want) or bad:
            problems.append(f"Q{n} row {i + 1}: got {list(got)}, expected {want}")
            if len(problems) >= 3:
                break
    return problems


@functools.cache
def reference(sf: float) -> dict[int, tuple[list[str], list[list[str]]]] | None:
    """DuckDB's reference answers at `sf` (read once), None at a scale factor that has none."""
    try:
        return answers(sf)
    except WorkloadError:
        return None


def answers_line(executions: Any, sf: float) -> str:
    """What the check of the results found, for a conclusion: every execution's `answer`
    ("ok", the problems, or "" when not checked) against DuckDB's reference answers, or why
    they were not checked."""
    if reference(sf) is None:
        return (f"Answers not checked: DuckDB has reference answers for scale factors "
                f"{', '.join(f'{a:g}' for a in ANSWER_SCALES)} only, not {sf:g}.")
    checked = executions[executions["answer"] != ""]
    wrong = checked[checked["answer"] != "ok"]
    line = (f"Answers: {len(checked) - len(wrong)} of {len(checked)} checked executions match "
            f"DuckDB's reference answers at SF {sf:g}")
    if wrong.empty:
        return line + "."
    first = wrong.iloc[0]
    where = ", ".join(sorted({f"Q{r.query} on {r.arm}" + (f" (order of {r.order_of})" if r.order_of else "")
                              for r in wrong.itertuples()}))
    return f"{line}; **{len(wrong)} differ** ({where}), e.g. {first['answer']}."
