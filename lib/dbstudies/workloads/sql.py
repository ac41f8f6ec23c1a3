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
from typing import Any, Callable

from ..core.errors import WorkloadError

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

    def walk(node: Any, select_id: int) -> None:
        if isinstance(node, dict):
            if "query_block" in node and isinstance(node["query_block"], dict):
                block = node["query_block"]
                walk(block, int(block.get("select_id", select_id)))
                return
            table = node.get("table")
            if isinstance(table, dict) and "table_name" in table:
                positions[select_id] = positions.get(select_id, 0) + 1
                out.append({"select_id": select_id, "position": positions[select_id],
                            "table": _table_name(table), "access_type": table.get("access_type"),
                            "key": table.get("key"),
                            "rows": table.get("rows", table.get("rows_examined_per_scan")),
                            "filtered": table.get("filtered")})
                for value in table.values():  # subqueries materialised under this table
                    if isinstance(value, (dict, list)):
                        walk(value, select_id)
                return
            for value in node.values():
                walk(value, select_id)
        elif isinstance(node, list):
            for item in node:
                walk(item, select_id)

    walk(plan, 1)
    return out


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


# ---------------------------------------------------------------- forcing a join order

class OrderNotForced(WorkloadError):
    """EXPLAIN shows another join order than the one STRAIGHT_JOIN was to force."""


_CLAUSE_END = re.compile(r"\b(WHERE|GROUP\s+BY|ORDER\s+BY|HAVING|LIMIT|UNION|WINDOW)\b", re.I)


def _depths(sql: str) -> list[int]:
    """The parenthesis depth of every character (string literals count as depth-neutral)."""
    depth, out, quote = 0, [], None
    for ch in sql:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        out.append(depth if ch != ")" else depth + 1)
    return out


def from_lists(sql: str) -> list[tuple[int, int, list[str]]]:
    """Every comma-separated FROM list of `sql`: (start, end, items); lists holding an
    explicit JOIN are left out (their order is the JOIN's).

    >>> [items for _, _, items in from_lists("SELECT a FROM t1, t2 x WHERE a IN (SELECT b FROM u)")]
    [['t1', 't2 x'], ['u']]
    """
    depth = _depths(sql)
    found = []
    for m in re.finditer(r"\bFROM\b", sql, re.I):
        d, start = depth[m.start()], m.end()
        end = start
        while end < len(sql) and depth[end] >= d:
            if depth[end] == d and sql[end] in ";)":
                break
            if depth[end] == d and _CLAUSE_END.match(sql, end) and (end == 0 or not sql[end - 1].isalnum()):
                break
            end += 1
        text = sql[start:end]
        if re.search(r"\bJOIN\b", "".join(c for c, dd in zip(text, depth[start:end]) if dd == d), re.I):
            continue
        items, last = [], start
        for i in range(start, end):
            if sql[i] == "," and depth[i] == d:
                items.append(sql[last:i].strip())
                last = i + 1
        items.append(sql[last:end].strip())
        found.append((start, end, items))
    return found


def _key(item: str) -> str:
    """The name a FROM item goes by in a plan: its alias, else its table."""
    words = re.sub(r"\bAS\b", " ", item.split(")")[-1] if item.startswith("(") else item, flags=re.I).split()
    return words[-1] if words else item


def force_order(sql: str, order: list[str]) -> str:
    """`sql` rewritten so that the server joins the tables in `order` (names or aliases as
    EXPLAIN shows them): the FROM list holding them is reordered, and STRAIGHT_JOIN goes
    into that SELECT and into the outermost one (inside a derived table the optimizer merges
    into the outer query, STRAIGHT_JOIN alone is silently ignored). Check the result with
    `verify_order`.

    >>> force_order("SELECT x FROM a, b, c WHERE 1", ["c", "a", "b"])
    'SELECT STRAIGHT_JOIN x FROM c, a, b WHERE 1'
    """
    wanted = [t for t in order if not t.startswith("<")]
    for start, end, items in from_lists(sql):
        keys = [_key(i) for i in items]
        if set(wanted) <= set(keys) and len(wanted) >= 2:
            ranked = sorted(range(len(items)), key=lambda i: (wanted.index(keys[i]) if keys[i] in wanted
                                                              else len(wanted) + i))
            rewritten = sql[:start] + " " + ", ".join(items[i] for i in ranked) + " " + sql[end:]
            return _straight(rewritten, start)
    raise OrderNotForced(f"no comma-separated FROM list holds all of {', '.join(wanted)}: "
                         "tables of a subquery the optimizer flattened (a semi-join) or of an "
                         "explicit JOIN cannot be ordered with STRAIGHT_JOIN")


def _straight(sql: str, from_at: int) -> str:
    """STRAIGHT_JOIN after the SELECT owning the FROM at `from_at` and after the outermost SELECT."""
    depth = _depths(sql)
    selects = [m.start() for m in re.finditer(r"\bSELECT\b", sql, re.I)]
    owner = max((s for s in selects if s < from_at and depth[s] == depth[from_at]), default=None)
    outer = min((s for s in selects if depth[s] == 0), default=None)
    for at in sorted({s for s in (owner, outer) if s is not None}, reverse=True):
        if not re.match(r"SELECT\s+STRAIGHT_JOIN\b", sql[at:], re.I):
            sql = sql[:at + 6] + " STRAIGHT_JOIN" + sql[at + 6:]
    return re.sub(r"[ \t]+\n", "\n", re.sub(r"(?<=\S) {2,}(?=\S)", " ", sql))


def verify_order(plan: dict[str, Any], order: list[str]) -> None:
    """Raise OrderNotForced unless the plan joins `order`'s tables in that order."""
    wanted = [t for t in order if not t.startswith("<")]
    blocks: dict[int, list[str]] = {}  # a subquery may use the same tables: compare per block
    for t in join_order(plan):
        if t["table"] in wanted:
            blocks.setdefault(t["select_id"], []).append(t["table"])
    got = next((b for b in blocks.values() if sorted(b) == sorted(wanted)),
               next(iter(blocks.values()), []))
    if got != wanted:
        raise OrderNotForced(f"the server joins {' '.join(got)}, not the forced {' '.join(wanted)} "
                             "(a STRAIGHT_JOIN it ignored? inside a merged derived table it is; "
                             "see DESIGN §5)")


def query_blocks(order: list[dict[str, Any]]) -> dict[int, list[str]]:
    """A plan's query blocks (`join_order` rows) with two or more real tables (not
    <derived…>/<subquery…>), each its tables in join order.

    >>> query_blocks([{"select_id": 1, "table": "a"}, {"select_id": 1, "table": "<derived2>"},
    ...               {"select_id": 1, "table": "b"}, {"select_id": 2, "table": "c"}])
    {1: ['a', 'b']}
    """
    blocks: dict[int, list[str]] = {}
    for t in order:
        if not str(t["table"]).startswith("<"):
            blocks.setdefault(int(t["select_id"]), []).append(str(t["table"]))
    return {sid: tables for sid, tables in blocks.items() if len(tables) >= 2}


@dataclass(frozen=True)
class Forcing:
    """What forcing another plan's join order into a query gave: the SQL to execute (None
    when the order could not be forced, `reason` saying why) and the order EXPLAIN showed."""
    sql: str | None
    reason: str
    in_effect: str


def force_plan(text: str, own: list[dict[str, Any]], wanted: list[dict[str, Any]],
               explain: Callable[[str], dict[str, Any]]) -> Forcing:
    """Rewrite `text` so that the server joins as the plan `wanted` does (`join_order` rows),
    where it now joins as `own`: every query block of `wanted` with two or more tables is
    forced (so that blocks which already agree keep their order under the STRAIGHT_JOIN the
    outer SELECT gets; one that cannot be forced is left as it is unless it differs), then
    `explain` (EXPLAIN FORMAT=JSON on the server) must show every forced block in the wanted
    order."""
    blocks, mine = query_blocks(wanted), query_blocks(own)
    differing = [tables for sid, tables in blocks.items() if mine.get(sid) != tables]
    forced, done, in_effect = text, [], ""
    try:
        for tables in blocks.values():
            try:
                forced = force_order(forced, tables)
                done.append(tables)
            except OrderNotForced:
                if tables in differing:
                    raise
        plan = explain(forced)
        in_effect = order_signature(join_order(plan))
        for tables in done:
            verify_order(plan, tables)
    except OrderNotForced as e:
        return Forcing(None, str(e), in_effect)
    return Forcing(forced, "", in_effect)


def plan_rows(plans: Any, label: str, query: int) -> list[dict[str, Any]]:
    """One candidate's recorded plan of one query (a table of `join_order` rows with `arm`
    and `query` columns), in join order."""
    part = plans[(plans["arm"] == label) & (plans["query"] == query)]
    return part.sort_values(["select_id", "position"]).to_dict("records")


def distinct_orders(plans: Any, labels: list[str], queries: list[int]) -> list[dict[str, Any]]:
    """For every query whose candidates (`labels`, in order) chose different join orders in
    `plans`: one {"query", "order_of"} per distinct order, named by the first candidate that
    chose it — the cells of a forced-order phase."""
    out = []
    for q in queries:
        by_order: dict[str, str] = {}
        for label in labels:
            own = plan_rows(plans, label, q)
            if own:
                by_order.setdefault(order_signature(own), label)
        if len(by_order) > 1:
            out += [{"query": q, "order_of": label} for label in by_order.values()]
    return out
