"""One SQL session (sql.py) on TPC-H SF 0.01 in a private MariaDB: timed executions, a
timeout recorded as censored (no seconds), handler counters, plans and join orders."""
import pytest

from dbstudies import tpch
from dbstudies.workloads import forcing, sql

pytestmark = pytest.mark.server


@pytest.fixture
def loaded(tpch_server):
    return tpch_server


def test_execution_timeout_counters_and_join_orders(loaded):
    q = tpch.queries()
    with sql.Session(loaded, "tpch") as s:
        e = s.execute(q[6], timeout=60, keep_result=True)
        assert not e.timed_out and e.seconds > 0 and e.rows == 1 and e.result[0][0] > 0
        assert e.counters["Handler_read_rnd_next"] + e.counters["Handler_read_next"] > 1000
        slow = s.execute("SELECT COUNT(*) FROM lineitem a, lineitem b WHERE a.l_comment < b.l_comment",
                         timeout=0.3)
        assert slow.timed_out and slow.seconds is None and slow.rows == 0
        assert s.execute("SELECT 1", timeout=1).rows == 1  # the session goes on after a timeout
        five = sql.join_order(s.explain(q[5]))
        assert {t["table"] for t in five} == {"customer", "orders", "lineitem", "supplier", "nation", "region"}
        assert [t["position"] for t in five] == [1, 2, 3, 4, 5, 6] and {t["select_id"] for t in five} == {1}
        assert all(t["access_type"] for t in five)
        thirteen = sql.join_order(s.explain(q[13]))  # a materialised derived table: its own block
        assert [(t["select_id"], t["table"]) for t in thirteen][0] == (1, "<derived2>")
        assert {t["table"] for t in thirteen if t["select_id"] == 2} == {"customer", "orders"}
        assert sql.order_signature(thirteen).startswith("<derived2> | 2: ")


def test_a_forced_join_order_is_in_effect_and_gives_the_same_answer(loaded):
    q, reference = tpch.queries(), tpch.answers(0.01)
    with sql.Session(loaded, "tpch") as s:
        for n in (5, 7, 9, 18):  # plain FROM lists, merged derived tables (7, 9), a subquery (18)
            chosen = [t["table"] for t in sql.join_order(s.explain(q[n])) if t["select_id"] == 1
                      and not t["table"].startswith("<")]
            forced_order = list(reversed(chosen))
            forced = forcing.force_order(q[n], forced_order)
            assert "STRAIGHT_JOIN" in forced
            forcing.verify_order(s.explain(forced), forced_order)  # raises if ignored
            assert [t["table"] for t in sql.join_order(s.explain(forced))
                    if t["table"] in forced_order][:len(forced_order)] == forced_order
            e = s.execute(forced, timeout=60, keep_result=True)
            assert tpch.check(n, e.result, reference[n]) == []
        with pytest.raises(forcing.OrderNotForced, match="semi-join"):
            forcing.force_order(q[4], ["lineitem", "orders"])  # lineitem sits in an EXISTS subquery
        with pytest.raises(forcing.OrderNotForced, match="the server joins"):
            forcing.verify_order(s.explain(q[5]), ["supplier", "region"])  # not the plan's order


def test_mysql_materialised_blocks_are_named_as_mariadb_names_them():
    """MySQL shows a derived table by its alias and a materialised IN subquery as
    <materialized_subquery>; join orders name them <derivedN>/<subqueryN> as MariaDB does,
    so that the two families' orders of TPC-H Q13 compare equal."""
    inner = {"query_block": {"select_id": 2, "nested_loop": [
        {"table": {"table_name": "customer", "access_type": "index"}},
        {"table": {"table_name": "orders", "access_type": "ref", "key": "i_orders_0"}}]}}
    mysql = {"query_block": {"select_id": 1, "table": {
        "table_name": "c_orders", "access_type": "ALL", "materialized_from_subquery": inner}}}
    mariadb = {"query_block": {"select_id": 1, "table": {
        "table_name": "<derived2>", "access_type": "ALL", "materialized": inner}}}
    assert sql.order_signature(sql.join_order(mysql)) == sql.order_signature(sql.join_order(mariadb)) \
        == "<derived2> | 2: customer orders"
    semi = {"query_block": {"select_id": 1, "table": {
        "table_name": "<materialized_subquery>", "access_type": "eq_ref",
        "materialized_from_subquery": {"query_block": {"select_id": 2, "table": {"table_name": "lineitem"}}}}}}
    assert sql.order_signature(sql.join_order(semi)) == "<subquery2> | 2: lineitem"
