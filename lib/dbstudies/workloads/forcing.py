"""Forcing a join order: a query's FROM lists found (`from_lists`), rewritten with STRAIGHT_JOIN
in another plan's order (`force_order`), checked in EXPLAIN to be in effect (`verify_order`) —
`force_plan` does all three, or says why the order could not be forced; and the distinct
orders the candidates chose (`distinct_orders`), DBT3's forced-order phase.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from ..core.errors import WorkloadError

# the error a server raises when a statement exceeds its time limit
from .sql import join_order, order_signature


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
