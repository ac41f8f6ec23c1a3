"""One SQL session for query studies (DBT3): timed executions with a server-side timeout said
in the server's dialect, the handler counters each execution moved, EXPLAIN FORMAT=JSON, and
the join order a plan uses.

A query that hits its timeout is recorded as timed out — `seconds` is None, never the
timeout's value — so that statistics can treat it as censored and reports show ">timeout".

    with Session(server, "tpch") as s:
        e = s.execute(sql, timeout=60)       # Execution(seconds=…, timed_out=False, rows=…, counters={…})
        order = join_order(s.explain(sql))   # [{"select_id": 1, "table": "region", "access_type": "ALL", …}, …]
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

# the error a server raises when a statement exceeds its time limit
TIMEOUT_ERRORS = {1969: "mariadb max_statement_time", 3024: "mysql max_execution_time"}
COUNTERS = ("Handler_read_first", "Handler_read_key", "Handler_read_last", "Handler_read_next",
            "Handler_read_prev", "Handler_read_rnd", "Handler_read_rnd_next", "Rows_read")


@dataclass
class Execution:
    """One execution of a statement: wall seconds (None when it timed out), result rows and
    the session counters it moved."""
    seconds: float | None
    timed_out: bool
    rows: int
    counters: dict[str, int] = field(default_factory=dict)
    result: list[tuple] | None = None


SIZE = re.compile(r"(\d+)([KMGT])", re.I)


def set_session(settings: dict[str, Any]) -> list[str]:
    """The SET SESSION statements that give a session `settings` (my.cnf spelling: dashes or
    underscores, sizes with a K/M/G/T suffix, booleans, strings such as optimizer_switch's).

    >>> set_session({"optimizer-use-condition-selectivity": 1, "join_buffer_size": "1M",
    ...              "optimizer_switch": "index_merge=off", "big_tables": True})
    ... # doctest: +NORMALIZE_WHITESPACE
    ['SET SESSION optimizer_use_condition_selectivity = 1', 'SET SESSION join_buffer_size = 1048576',
     "SET SESSION optimizer_switch = 'index_merge=off'", 'SET SESSION big_tables = ON']
    """
    return [f"SET SESSION {_name(k)} = {_literal(v)}" for k, v in settings.items()]


def _name(key: str) -> str:
    name = key.strip().replace("-", "_")
    return name[len("loose_"):] if name.startswith("loose_") else name


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    text = str(value).strip()
    if isinstance(value, (int, float)) or re.fullmatch(r"-?\d+(\.\d+)?", text):
        return text
    size = SIZE.fullmatch(text)
    if size:
        return str(int(size[1]) * 1024 ** ("KMGT".index(size[2].upper()) + 1))
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def session_problems(server: Any, settings: dict[str, Any]) -> list[str]:
    """Which of `settings` a session of `server` cannot take (a global-only or read-only
    variable, a value it refuses), each with the server's own words; [] when all apply."""
    import mysql.connector
    problems = []
    conn = server.connect()
    try:
        cursor = conn.cursor()
        for (key, value), statement in zip(settings.items(), set_session(settings)):
            try:
                cursor.execute(statement)
            except mysql.connector.Error as e:
                problems.append(f"{key} = {value}: {e.msg}")
        cursor.close()
    finally:
        conn.close()
    return problems


class Session:
    """A connection to `database` on `server` (anything with `connect()` and a `flavour`),
    with `settings` given to this session only (`set_session`)."""

    def __init__(self, server: Any, database: str, settings: dict[str, Any] | None = None):
        self.dialect = server.flavour.dialect
        self.conn = server.connect(database=database)
        self.cursor = self.conn.cursor()
        for statement in set_session(dict(settings or {})):
            self.cursor.execute(statement)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.cursor.close()
            self.conn.close()
        except Exception:  # noqa: BLE001 - the server may be gone
            pass

    def counters(self) -> dict[str, int]:
        names = ",".join(f"'{c}'" for c in COUNTERS)
        self.cursor.execute(f"SHOW SESSION STATUS WHERE Variable_name IN ({names})")
        return {k: int(v) for k, v in self.cursor.fetchall()}

    def execute(self, sql: str, timeout: float, *, keep_result: bool = False) -> Execution:
        """Run `sql` (one SELECT) to its last row, with a server-side time limit."""
        import mysql.connector
        statements = self.dialect.with_timeout(sql, timeout)
        before = self.counters()
        for s in statements[:-1]:
            self.cursor.execute(s)
        t0 = time.perf_counter()
        try:
            self.cursor.execute(statements[-1])
            rows = self.cursor.fetchall()
        except mysql.connector.Error as e:
            if e.errno not in TIMEOUT_ERRORS:
                raise
            return Execution(None, True, 0, self._moved(before))
        seconds = time.perf_counter() - t0
        return Execution(seconds, False, len(rows), self._moved(before), rows if keep_result else None)

    def _moved(self, before: dict[str, int]) -> dict[str, int]:
        after = self.counters()
        return {k: after[k] - before.get(k, 0) for k in after}

    def explain(self, sql: str) -> dict[str, Any]:
        """The plan as EXPLAIN FORMAT=JSON gives it (MySQL: its format version 1, the nested
        query blocks MariaDB also has, not 9.x's default iterator tree)."""
        for statement in self.dialect.explain_prelude():
            self.cursor.execute(statement)
        self.cursor.execute(f"EXPLAIN FORMAT=JSON {sql}")
        return json.loads(self.cursor.fetchall()[0][0], object_pairs_hook=keep_repeated_keys)


def keep_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict, unless a key repeats — MariaDB 10.5 writes the tables of a
    join as repeated "table" (and "block-nl-join") keys of one object —: then its plain values
    (select_id, …) stay keys and every nested one goes, in its order, into
    {"in_order": [{key: value}, …]}.

    >>> json.loads('{"select_id": 2, "table": {"table_name": "a"}, "table": {"table_name": "b"}}',
    ...            object_pairs_hook=keep_repeated_keys)
    {'select_id': 2, 'in_order': [{'table': {'table_name': 'a'}}, {'table': {'table_name': 'b'}}]}
    """
    keys = [k for k, _ in pairs]
    if len(set(keys)) == len(keys):
        return dict(pairs)
    nested = [(k, v) for k, v in pairs if isinstance(v, (dict, list))]
    return {**{k: v for k, v in pairs if not isinstance(v, (dict, list))},
            "in_order": [{k: v} for k, v in nested]}


def join_order(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The tables of a plan in the order the server joins them, one dict each: select_id
    (which query block; a merged derived table's tables join in the outer one), position
    within that block, table, access_type, key, rows, filtered. Works on MariaDB's and
    MySQL's EXPLAIN FORMAT=JSON (version 1). A materialised derived table or subquery is named
    as MariaDB names it, `<derived2>` / `<subquery2>` after the block it holds, also where
    MySQL shows its alias or `<materialized_subquery>`, so that the families' orders compare.

    >>> join_order({"query_block": {"select_id": 1, "nested_loop": [
    ...     {"table": {"table_name": "r", "access_type": "ALL", "rows": 5}},
    ...     {"table": {"table_name": "n", "access_type": "ref", "key": "i_n", "rows": 2}}]}})
    ... # doctest: +NORMALIZE_WHITESPACE
    [{'select_id': 1, 'position': 1, 'table': 'r', 'access_type': 'ALL', 'key': None, 'rows': 5, 'filtered': None},
     {'select_id': 1, 'position': 2, 'table': 'n', 'access_type': 'ref', 'key': 'i_n', 'rows': 2, 'filtered': None}]
    """
    out: list[dict[str, Any]] = []
    positions: dict[int, int] = {}
    for select_id, table in _tables(plan, 1):
        positions[select_id] = positions.get(select_id, 0) + 1
        out.append({"select_id": select_id, "position": positions[select_id],
                    "table": _table_name(table), "access_type": table.get("access_type"),
                    "key": table.get("key"), "rows": table.get("rows", table.get("rows_examined_per_scan")),
                    "filtered": table.get("filtered")})
    return out


def _tables(node: Any, select_id: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """(query block, table) of every table a plan joins, in its order: a query block's own
    select_id, subqueries materialised under a table after it."""
    if isinstance(node, list):
        for item in node:
            yield from _tables(item, select_id)
    elif isinstance(node, dict):
        if isinstance(node.get("query_block"), dict):
            block = node["query_block"]
            yield from _tables(block, int(block.get("select_id", select_id)))
            return
        table = node.get("table")
        if isinstance(table, dict) and "table_name" in table:
            yield select_id, table
            for value in table.values():
                if isinstance(value, (dict, list)):
                    yield from _tables(value, select_id)
            return
        for value in node.values():
            yield from _tables(value, select_id)


def _table_name(table: dict[str, Any]) -> str:
    """A plan's table as join orders name it; MySQL's materialised blocks as MariaDB's."""
    name = str(table["table_name"])
    held = table.get("materialized_from_subquery")
    if not isinstance(held, dict):
        return name
    inner = held.get("query_block") or held.get("sharing_temporary_table_with") or {}
    sid = inner.get("select_id") if isinstance(inner, dict) else None
    if sid is None or (name.startswith("<") and name != "<materialized_subquery>"):
        return name
    return f"<subquery{sid}>" if name == "<materialized_subquery>" else f"<derived{sid}>"


def order_signature(order: list[dict[str, Any]]) -> str:
    """A plan's join order as text, one query block after another: 'region nation customer'
    and, for other blocks, '| 2: customer orders'.

    >>> order_signature([{"select_id": 1, "table": "a"}, {"select_id": 1, "table": "b"},
    ...                  {"select_id": 2, "table": "c"}])
    'a b | 2: c'
    """
    blocks: dict[int, list[str]] = {}
    for t in order:
        blocks.setdefault(t["select_id"], []).append(str(t["table"]))
    parts = []
    for i, (sid, tables) in enumerate(sorted(blocks.items())):
        parts.append(" ".join(tables) if i == 0 else f"{sid}: " + " ".join(tables))
    return " | ".join(parts)





