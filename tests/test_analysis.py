"""The studies' analysis (summary, relative tables, A/A, conclusion) on synthetic
steps tables with known answers — no server needed."""
import re

import numpy as np
import pandas as pd
import pytest

from dbstudies.analysis import caveats
from dbstudies.kit import thread_handling as th
from dbstudies.kit.study import load
from dbstudies.kit.studykit import arms_of
from dbstudies.measure import checks
from dbstudies.store.params import ParamError
from dbstudies.store.tables import STEPS

tp = load("thread_pool")
PC, POOL, TWIN = th.PER_CONNECTION, th.POOL, th.PER_CONNECTION + " (A/A)"


def synthetic_steps(repeats=5, cv=0.03, pool_gain=None, busy=(), seed=0):
    """Steps as the loop writes them: pool is `pool_gain[threads]` × faster in QPS (and its
    p99 that much lower); the twin is the baseline again."""
    pool_gain = pool_gain or {1: 1.0, 16: 1.0, 64: 1.0, 256: 1.3}
    rng = np.random.default_rng(seed)
    rows, step = [], 0
    for repeat in range(1, repeats + 1):
        for arm in (PC, TWIN, POOL):
            for w in ("oltp_point_select", "oltp_read_only"):
                for t, gain in pool_gain.items():
                    step += 1
                    g = gain if arm == POOL else 1.0
                    noise = np.exp(rng.normal(0, cv))
                    row = {c: 0 for c in STEPS.columns}
                    row.update(step=step, phase="measure", repeat=repeat, arm=arm, workload=w,
                               threads=t, qps=10_000 * g * noise, latency_p99_ms=5 * t / g * noise,
                               cpu_server_pct=100.0, cpu_client_pct=50.0, host_other_pct=1.0,
                               host_busy=step in busy)
                    rows.append(row)
    return STEPS.conform(pd.DataFrame(rows))


def test_summary_has_medians_spread_and_cv_per_configuration():
    s = tp.summary(synthetic_steps())
    assert len(s) == 2 * 3 * 4
    row = s[(s.arm == POOL) & (s.threads == 256) & (s.workload == "oltp_read_only")].iloc[0]
    assert row.qps_n == 5 and 12_000 < row.qps_median < 14_000
    assert row.qps_min <= row.qps_ci_low <= row.qps_median <= row.qps_ci_high <= row.qps_max
    assert 0.005 < row.qps_cv < 0.08 and row.p99_median == pytest.approx(5 * 256 / 1.3, rel=0.1)
    assert {"cpu_server_pct", "cpu_client_pct", "busy_steps", "p99_cv"} <= set(s.columns)


def test_relative_finds_the_effect_and_only_it():
    steps = synthetic_steps()
    p = checks.resolve(tp, "quick", aa_control=True)
    rel = tp.relative(steps, p)
    assert set(rel["candidate"]) == {POOL} and len(rel) == 8  # the twin is not a candidate
    better = rel[rel.verdict == "better"]
    assert set(better["threads"]) == {256} and len(better) == 2
    assert (rel[rel.threads < 256].verdict == "draw").all()
    p99 = tp.relative(steps, p, "p99")
    assert set(p99[p99.verdict == "better"]["threads"]) == {256}  # lower latency is better
    assert (p99[p99.threads == 256].delta_pct < -15).all()  # 1/1.3 = −23 %, give or take noise
    aa = tp.relative(steps, p, aa=True)
    assert set(aa["candidate"]) == {TWIN} and (aa.verdict == "draw").all() and len(aa) == 8
    layout = tp.relative_layout(rel)
    assert list(layout.columns) == ["threads", f"{POOL} vs {PC} · oltp_point_select",
                                    f"{POOL} vs {PC} · oltp_read_only"]  # the pair named
    assert list(layout.threads) == [1, 16, 64, 256] and layout.iloc[3, 2].endswith("better")


def test_without_the_control_there_is_no_aa_table():
    steps = synthetic_steps()
    steps = steps[steps.arm != TWIN]
    assert tp.relative(steps, checks.resolve(tp, "quick"), aa=True).empty


def test_conclusion_states_verdicts_mde_aa_and_busy_steps():
    steps = synthetic_steps(busy={3, 4})
    steps["remeasured"] = (steps["step"] == 5) * 3
    p = checks.resolve(tp, "quick", aa_control=True)
    tables = {"qps": tp.relative(steps, p), "p99": tp.relative(steps, p, "p99"),
              "aa": tp.relative(steps, p, aa=True)}
    text = tp.conclusion(tp.summary(steps), tables, p, host_cpus=2)
    assert ("throughput (QPS), pool-of-threads vs one-thread-per-connection over 8 comparisons: 2 better, "
            "6 inconclusive (could see ±") in text
    assert "detectable: " in text and "in the median cell" in text
    assert "A/A control (one-thread-per-connection twice, 8 cells): 8 inconclusive — no false difference (its median MDE" in text
    busy = caveats.busy(steps)  # a caveat of the Answer now, not a line of the conclusion
    assert "2 measured steps still ran on a busy host after 2 retries" in busy
    assert "3 attempts ran on a busy host (other processes used more than 10 % of the machine, or " \
           "the hypervisor stole more than 5 %) and were discarded and measured again" in busy
    assert caveats.busy(synthetic_steps()) == "" and "busy" not in text
    assert "2-CPU host" in text


def test_conclusion_says_when_no_verdict_is_possible():
    steps = synthetic_steps(repeats=1)
    p = checks.resolve(tp, "quick", repeats=1, budget=0, target={})
    tables = {"qps": tp.relative(steps, p)}
    text = tp.conclusion(tp.summary(steps), tables, p, host_cpus=2)
    assert "no verdict is possible" in text and "over 8 comparisons: 8 not judged." in text


def test_a_noisy_aa_is_reported_as_such():
    steps = synthetic_steps(cv=0.001)
    steps.loc[steps.arm == TWIN, "qps"] *= 1.5  # a drifting machine: the twin looks faster
    p = checks.resolve(tp, "quick", aa_control=True)
    text = tp.conclusion(tp.summary(steps), {"aa": tp.relative(steps, p, aa=True)}, p, 2)
    assert "**not all draw**" in text


def test_versions_tables_put_every_version_in_one_family_and_the_sources_layouts():
    vs = load("versions")
    p = checks.resolve(vs, "quick")
    labels = [a.label for a in arms_of(vs, p)]
    assert labels[0] == "mariadb-10.11" and sorted(labels) == sorted(vs.module.FOUR)
    gains = {"mariadb-10.5": 1.0, "mariadb-11.8": 1.0, "mysql-9.7": 0.7}
    rng = np.random.default_rng(3)
    rows = []
    for repeat in range(1, 9):
        for arm in labels:
            for t in (1, 16, 64, 256):
                q = 10_000 * gains.get(arm, 1.0) * np.exp(rng.normal(0, 0.03))
                rows.append({**{c: 0 for c in STEPS.columns}, "step": len(rows) + 1,
                             "phase": "measure", "repeat": repeat, "arm": arm,
                             "workload": "oltp_read_only", "threads": t, "qps": q,
                             "latency_p99_ms": 1e6 / q, "cpu_server_pct": 100.0,
                             "cpu_client_pct": 50.0})
    steps = STEPS.conform(pd.DataFrame(rows))
    rel = vs.relative(steps, p)
    assert len(rel) == 12 and set(rel.candidate) == set(labels[1:])  # 3 versions × 4 cells, one family
    assert (rel[rel.candidate == "mysql-9.7"].verdict == "worse").all()
    assert (rel[rel.candidate != "mysql-9.7"].verdict == "draw").all()
    layout = vs.relative_layout(rel)
    assert list(layout.columns) == ["threads", *(f"{v} vs {labels[0]}" for v in labels[1:])]
    assert layout.iloc[0][f"mysql-9.7 vs {labels[0]}"].endswith("worse")
    qps = vs.qps_table(vs.summary(steps))
    assert list(qps.columns) == ["threads", *labels] and re.fullmatch(r"[\d,]+ \([\d,]+–[\d,]+\)", qps.iloc[0, 1])
    text = vs.conclusion(vs.summary(steps), {"qps": rel}, p, host_cpus=2)
    assert "throughput (QPS), mariadb-10.5, mariadb-11.8, mysql-9.7 vs mariadb-10.11 over 12 comparisons: 4 worse, 3 same, 5 inconclusive" in text


def test_several_servers_give_every_arm_vs_the_baseline_and_not_available_cells():
    p = checks.resolve(tp, "quick", flavours=["mariadb-10.11", "mysql-9.7"])
    labels = [a.label for a in arms_of(tp, p)]
    base, pool, mysql = (f"mariadb-10.11 · {PC}", f"mariadb-10.11 · {POOL}", f"mysql-9.7 · {PC}")
    assert labels == [base, pool, mysql] and arms_of(tp, p)[2].flavour == "mysql-9.7"
    assert tp.not_available(p) == [(f"mysql-9.7 · {POOL}", "mysql-9.7")]
    gains = {base: 1.0, pool: 1.0, mysql: 0.7}
    rng = np.random.default_rng(5)
    rows = [{**{c: 0 for c in STEPS.columns}, "step": i + 1, "phase": "measure", "repeat": r,
             "arm": arm, "workload": "oltp_point_select", "threads": t,
             "qps": 10_000 * gains[arm] * np.exp(rng.normal(0, 0.03)), "latency_p99_ms": 1.0,
             "cpu_server_pct": 100.0, "cpu_client_pct": 50.0}
            for i, (r, arm, t) in enumerate((r, a, t) for r in range(1, 7) for a in labels
                                            for t in (1, 16))]
    steps = STEPS.conform(pd.DataFrame(rows))
    rel = tp.relative(steps, p)
    na = rel[rel.candidate == f"mysql-9.7 · {POOL}"]
    assert len(rel) == 6 and len(na) == 2 and (na.verdict == "not available on mysql-9.7").all()
    assert na["delta_pct"].isna().all()  # no figure is made up for it
    assert (rel[rel.candidate == mysql].verdict == "worse").all()
    assert (rel[rel.candidate == pool].verdict == "draw").all()
    layout = tp.relative_layout(rel)
    assert layout.iloc[0][f"mysql-9.7 · {POOL} vs {base}"] == "not available on mysql-9.7"
    text = tp.conclusion(tp.summary(steps), {"qps": rel}, p, host_cpus=2)
    assert (f"throughput (QPS), each server × scheduler vs {base} over 4 comparisons: 2 worse, 2 same, "
            "2 not available" in text)
    assert "4 comparisons" in text  # the untested cells are not in the Holm family


def test_flavours_are_checked():
    for kw, message in [({"flavours": ["mysql-9.7"]}, "the baseline mariadb-10.11 must be one of"),
                        ({"flavour": "mysql-9.7", "flavours": ["mysql-9.7"]},
                         "schedulers: none of mysql-9.7 has a thread pool"),
                        ({"flavours": ["mariadb-10.11", "mariadb-10.11"]}, "need distinct flavours")]:
        with pytest.raises(ParamError, match=message):
            checks.resolve(tp, "smoke", **kw)


def test_costs_say_which_per_transaction_costs_moved_where_a_verdict_was_reached():
    """The pool 30 % faster, its server CPU per transaction 25 % lower, its context switches
    unchanged, no redo (a read-only cell: not comparable on a log scale, left out)."""
    from dbstudies.analysis import costs
    p = checks.resolve(tp, "quick")
    rng = np.random.default_rng(11)
    rows = []
    for repeat in range(1, 9):
        for arm, gain in ((PC, 1.0), (POOL, 1.3)):
            for t in (1, 64):
                faster = gain if t == 64 else 1.0  # only at 64 threads
                noise = np.exp(rng.normal(0, 0.02, 3))
                rows.append({**{c: 0 for c in STEPS.columns}, "step": len(rows) + 1,
                             "phase": "measure", "repeat": repeat, "pair": repeat * 10 + t,
                             "arm": arm, "workload": "oltp_point_select", "threads": t,
                             "qps": 10_000 * faster * noise[0], "latency_p99_ms": 1.0,
                             "cpu_server_us_per_txn": 100 / faster * noise[1],
                             "cs_server_voluntary_per_txn": 2.0 * noise[2],
                             "redo_bytes_per_txn": 0.0, "rows_read_per_txn": np.nan})
    steps = STEPS.conform(pd.DataFrame(rows))
    t = costs.tables(steps, arms_of(tp, p), p)
    assert set(t) == {"cpu_server_us_per_txn", "cs_server_voluntary_per_txn"}  # no zeros, no NaN
    cpu = t["cpu_server_us_per_txn"].set_index("threads")
    assert cpu.loc[64, "verdict"] == "better" and cpu.loc[1, "verdict"] == "draw"
    rel = tp.relative(steps, p)
    m = costs.moved({"QPS": rel}, t)
    assert m[["threads", "candidate"]].values.tolist() == [[64, POOL]]  # the one judged cell
    row = m.iloc[0]
    assert re.fullmatch(r"QPS: better \(\+(29|30)\.\d %\)", row["judged"]) and row["within the draw"] == 1
    assert re.fullmatch(r"server CPU µs per transaction −2\d\.\d % \[−\d+\.\d, −\d+\.\d\]",
                        row["costs that moved"]), row["costs that moved"]
