"""Our TPC-C-like sysbench workload: its key generators (pure, no server) and, on a real
private server, prepare → consistency conditions 1–4 → a run → the conditions again, the
mix, the 1 % rollbacks, remote warehouses (which a widely used sysbench TPC-C script never
picks), and lock-wait timeouts retried and counted, never dropped."""
import collections
import math
import threading

import pytest
from conftest import prepared
from processes import wait_for

from dbstudies.measure import checks, experiment, ownership
from dbstudies.store import results
from dbstudies.workloads import tpcc

MIX = {"new_order": 0.45, "payment": 0.43, "order_status": 0.04, "delivery": 0.04, "stock_level": 0.04}


def test_key_generators_follow_the_standard():
    s = tpcc.selftest()
    customers, items, names = s["customer_ids"], s["item_ids"], s["name_numbers"]
    assert 1 <= min(customers) and max(customers) <= 3000
    assert 1 <= min(items) and max(items) <= 100000
    assert 0 <= min(names) and max(names) <= 999
    # NURand is skewed: the 10 % most drawn customer ids get far more than 10 % of draws
    top = sum(n for _, n in collections.Counter(customers).most_common(300))
    assert top / len(customers) > 0.2
    # 2.1.6.1: the run-time C of C_LAST differs from the load-time C by 65..119, not 96 or 112
    deltas = {abs(c - s["c_load"]) for c in s["c_run"]}
    assert deltas and all(65 <= d <= 119 and d not in (96, 112) for d in deltas) and len(deltas) > 10
    assert s["last_names"] == ["BARBARBAR", "PRICALLYOUGHT", "EINGEINGEING"]  # 4.3.2.3


@pytest.fixture(scope="module")
def loaded(flavour, tmp_path_factory):
    with prepared(flavour, tmp_path_factory.mktemp("tpcc") / "srv", "tpcc", warehouses=2) as both:
        yield both


def lock_timeouts(server):
    """InnoDB's count of lock wait timeouts (INNODB_METRICS lock_timeouts, on by default)."""
    return count(server, "SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = 'lock_timeouts'")


def count(server, sql):
    return int(server.query(sql)[0][0])


@pytest.mark.server
def test_prepare_loads_the_standard_cardinalities_consistently(loaded):
    s, _ = loaded
    q = "SELECT COUNT(*) FROM sbtest."
    assert [count(s, q + t) for t in ("warehouse", "district", "customer", "history", "orders",
                                      "new_orders", "item", "stock")] == \
        [2, 20, 60_000, 60_000, 60_000, 18_000, 100_000, 200_000]
    assert count(s, q + "order_line") == count(s, "SELECT SUM(o_ol_cnt) FROM sbtest.orders")
    # every last name 0..999 exists in every district (customers 1..1000 take them in order)
    assert count(s, "SELECT COUNT(DISTINCT c_last) FROM sbtest.customer WHERE c_w_id = 1 AND c_d_id = 1") == 1000
    assert tpcc.consistency(s) == []


@pytest.mark.server
def test_a_run_keeps_the_conditions_follows_the_mix_and_uses_remote_warehouses(loaded):
    s, sb = loaded
    res = sb.run("tpcc", threads=4, duration=8, seed=3)
    assert tpcc.consistency(s) == []
    types = res.types.set_index("type")
    n = int(types["count"].sum())
    assert n == res.totals["events"] > 1000  # one sysbench event = one transaction
    for name, share in MIX.items():  # within 4 binomial SDs (plus half a point)
        got = types.loc[name, "count"] / n
        assert abs(got - share) <= 4 * math.sqrt(share * (1 - share) / n) + 0.005, (name, got)
    no = types.loc["new_order"]
    assert 0 < no["rollbacks"] < 0.03 * no["count"]  # 2.4.1.4: 1 % roll back
    assert (types.drop(index="new_order")["rollbacks"] == 0).all()
    assert (types["latency_p99_ms"] >= types["latency_p50_ms"]).all() and (types["latency_p50_ms"] > 0).all()
    per_second = res.type_intervals.groupby("type")["count"].sum()
    assert per_second.to_dict() == types["count"].to_dict()  # every transaction in some second
    assert res.type_intervals["second"].between(1, 8 + 2).all()
    # remote warehouses: New-Order lines supplied by the other one, Payments through it
    assert count(s, "SELECT COUNT(*) FROM sbtest.order_line WHERE ol_supply_w_id <> ol_w_id") > 0
    assert count(s, "SELECT COUNT(*) FROM sbtest.orders WHERE o_all_local = 0") > 0
    assert count(s, "SELECT SUM(s_remote_cnt) FROM sbtest.stock") > 0
    assert count(s, "SELECT COUNT(*) FROM sbtest.history WHERE h_c_w_id <> h_w_id") > 0


@pytest.mark.server
def test_lock_wait_timeouts_are_retried_and_counted(loaded):
    """Another session holds warehouse 1's district rows, with a 1-s lock wait timeout,
    until a transaction waiting on it has timed out: New-Orders and Payments there time out,
    are rolled back and run again; each retry is counted, no transaction is lost and the
    conditions still hold."""
    s, sb = loaded
    s.query("SET GLOBAL innodb_lock_wait_timeout = 1")
    before = lock_timeouts(s)
    try:
        result = {}
        run = threading.Thread(target=lambda: result.update(r=sb.run("tpcc", threads=4, duration=8, seed=5)))
        with s.connect(database="sbtest") as c:
            cur = c.cursor()
            cur.execute("BEGIN")
            cur.execute("SELECT * FROM district WHERE d_w_id = 1 FOR UPDATE")
            cur.fetchall()
            run.start()
            # a state, not seconds: InnoDB's own count of lock wait timeouts went up
            wait_for(lambda: lock_timeouts(s) > before, 60, "a lock wait timeout on our rows")
            cur.execute("ROLLBACK")
        run.join(60)
    finally:
        s.query("SET GLOBAL innodb_lock_wait_timeout = 50")
    res = result["r"]
    types = res.types.set_index("type")
    assert types["retries"].sum() > 0 and types["retries"].sum() == res.totals["errors"]
    assert int(types["count"].sum()) == res.totals["events"]
    assert tpcc.consistency(s) == []


@pytest.mark.server
def test_the_thread_pool_study_runs_tpcc_and_reports_its_types(tmp_path):
    """`workloads=["tpcc"]` in a study: TPC-C's tables are prepared (not sbtest's), the
    warm-up runs TPC-C, and the per-type tables and New-Order per minute come out."""
    from dbstudies.analysis import transactions
    from dbstudies.kit.study import load
    from dbstudies.store.tables import STEPS
    tp = load("thread_pool")
    p = checks.resolve(tp, "smoke", workloads=["tpcc"], threads=[2], repeats=1, design="blocks",
                       duration=2)  # a per-second series: 1-s steps may keep no whole second
    run = ownership.open_run(tp, p, root=tmp_path)
    experiment.measure(tp, p, run, progress=False)
    steps = results.measured(run)
    assert set(steps["workload"]) == {"tpcc"} and len(steps) == 2
    assert set(run.table(STEPS).query("phase == 'warmup'")["workload"]) == {"tpcc"}
    types = transactions.transaction_types(run, steps)
    assert len(types) == 2 * 5 and list(types["type"][:5]) == list(MIX)
    assert (types["per_s"] > 0).all() and types["share_pct"].between(0, 100).all()
    nopm = transactions.new_orders_per_minute(run, steps)
    assert len(nopm) == 2 and (nopm[["nopm_median", "tps_median"]] > 0).all().all()
    assert (nopm["tps_min"] <= nopm["tps_median"]).all()
    series, runs = transactions.tpcc_per_second(run, steps)  # the per-second chart's data
    assert set(series["step"]) == set(steps["step"]) == set(runs["step"])
    from dbstudies.store.tables import TYPE_INTERVALS
    per_second = run.table(TYPE_INTERVALS).query("type == 'new_order'")
    # matched on (step, second) pairs: a second only one of the tables has (the last, partial
    # one) counts in neither sum
    same = per_second.merge(series[["step", "second"]], on=["step", "second"])
    assert not same.empty and series["nopm"].sum() == 60 * same["count"].sum()


@pytest.mark.server
def test_a_broken_condition_is_found(loaded):
    s, _ = loaded
    s.query("UPDATE sbtest.warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 2")
    try:
        problems = tpcc.consistency(s)
        assert len(problems) == 1 and problems[0].startswith("condition 1 (W_YTD = sum(D_YTD)")
    finally:
        s.query("UPDATE sbtest.warehouse SET w_ytd = w_ytd - 1 WHERE w_id = 2")
    assert tpcc.consistency(s) == []
