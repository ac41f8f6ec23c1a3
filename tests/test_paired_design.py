"""The paired design without servers: its plan, what it refuses before anything starts, the
memory check, the design line, the planner's prediction and the calibration on A/A pairs."""
import math
import time

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from dbstudies import analysis, stats
from dbstudies.analysis import aa
from dbstudies.core.errors import ParamError
from dbstudies.kit import study as study_registry
from dbstudies.kit.study import load
from dbstudies.kit.studykit import Arm, arms_of
from dbstudies.measure import checks, schedule
from dbstudies.measure.loop import Loop
from dbstudies.report import described
from dbstudies.store import results, tables
from dbstudies.store.results import Run
from dbstudies.workflows import planner

tp = load("thread_pool")


@pytest.mark.parametrize("k", [2, 3])
def test_paired_plan_balances_positions_and_shuffles_cells(k):
    arms = [Arm(x) for x in "ABC"[:k]]
    cells = [{"workload": "w", "threads": t} for t in (1, 4, 16, 64)]
    plan = schedule.paired_order(arms, cells, 2 * k, seed=3)
    assert len(plan) == 2 * k * len(cells) * k and plan["step"].tolist() == list(range(1, len(plan) + 1))
    # every pair: one cell, every arm once, back to back
    for _, pair in plan.groupby("pair"):
        assert sorted(pair["arm"]) == sorted(a.label for a in arms)
        assert pair["threads"].nunique() == 1 and pair["position"].tolist() == list(range(k))
        assert pair["step"].diff().dropna().eq(1).all()
    # every arm in every position equally often, per cell (AB as often as BA)
    counts = plan.groupby(["threads", "arm", "position"]).size()
    assert (counts == 2).all() and len(counts) == len(cells) * k * k
    # every round measures every cell once, in an order that changes between rounds
    orders = plan.groupby("repeat")["threads"].apply(lambda t: tuple(dict.fromkeys(t)))
    assert orders.map(len).eq(len(cells)).all() and orders.nunique() > 1
    assert plan.equals(schedule.paired_order(arms, cells, 2 * k, seed=3))  # seeded


def test_a_paired_run_keeps_every_server_up_so_memory_is_checked_first():
    p = checks.resolve(tp, "quick")
    arms = arms_of(tp, p)
    needed = checks.memory_needed(arms, p)
    assert [k for k, _ in needed] == [a.label for a in arms]  # one server per arm
    assert all(b == 2 * 2**30 + checks.SERVER_OVERHEAD + 256 * checks.PER_CONNECTION
               for _, b in needed)  # base.cnf's 2G pool, 256 client threads
    assert checks.memory_problems(arms, p, available=24 * 2**30) == []
    (msg,) = checks.memory_problems(arms, p, available=5 * 2**30)
    assert msg.startswith("memory: the 2 servers this paired design keeps up at once would hold 5.5 GiB")
    assert "design blocks" in msg
    blocks = checks.resolve(tp, "quick", design="blocks", target={})  # blocks: one server per flavour
    assert len(checks.memory_needed(arms_of(tp, blocks), blocks)) == 1
    with pytest.raises(ParamError, match="memory: the 3 servers this paired design"):
        checks.resolve(tp, "full", aa_control=True, settings={"innodb_buffer_pool_size": "16G"})


def test_what_the_paired_design_refuses_before_anything_starts():
    with pytest.raises(ParamError, match=r"design: one of paired, blocks, got 'pairs'"):
        checks.resolve(tp, "smoke", design="pairs")
    with pytest.raises(ParamError, match="restart_every: must be ≥ 1"):
        checks.resolve(tp, "smoke", restart_every=0)
    with pytest.raises(ParamError, match=r"budget: 1 min cannot hold the two rounds a verdict needs"):
        checks.resolve(tp, "quick", budget=1, target={})
    with pytest.raises(ParamError, match="budget: minutes > 0"):
        checks.resolve(tp, "quick", budget=-5)
    p = checks.resolve(tp, "quick", budget=30, target={})
    assert schedule.estimated_seconds(tp, p) == 1800 and schedule.rounds(p) == schedule.MAX_ROUNDS


def test_the_design_line_says_how_a_run_was_measured():
    meta = {"design": "blocks", "arms": [{"label": "A"}, {"label": "B"}], "parameters": {"repeats": 5}}
    assert described.design_line(meta).startswith("blocks: 5 repeats, each arm (2) measured in a block")
    meta = {"design": "paired", "arms": [{"label": "A"}, {"label": "B"}, {"label": "A (A/A)"}],
            "rounds_done": 7, "plan": [], "parameters": {"restart_every": 2, "budget": 10}}
    assert described.design_line(meta).startswith(
        "paired rounds: 7 rounds (10-minute budget), the 3 arms of a cell back to back")
    assert "every 2 rounds" in described.design_line(meta)
    assert described.design_line({}) == "not recorded"


def fake_paired_run(tmp_path, sd_own, rounds, cells=(1, 16), shift=0.0, seed=0, twin=False):
    """A run whose paired steps have known noise: a shared round effect and `sd_own` per step."""
    run = Run.create("thread_pool", {}, root=tmp_path)
    labels = ["base", "base (A/A)" if twin else "cand"]
    run.update(design="paired", arms=[{"label": x} for x in labels])
    rng = np.random.default_rng(seed)
    rows, step = [], 0
    for r in range(1, rounds + 1):
        for t in cells:
            shared = rng.normal(0, 0.15)
            for pos, arm in enumerate(labels):
                step += 1
                own = rng.normal(0, sd_own) + (shift if arm == "cand" else 0)
                rows.append({"step": step, "phase": "measure", "repeat": r, "arm": arm,
                             "workload": "oltp_point_select", "threads": t, "pair": step // 2 + 1,
                             "position": pos, "qps": 1000 * math.exp(shared + own),
                             "latency_p99_ms": math.exp(-shared - own)})
    steps = pd.DataFrame(rows)
    for col, dtype in tables.STEPS.columns.items():
        if col not in steps:
            steps[col] = pd.Series(np.nan if dtype == "float64" else 0, index=steps.index).astype(
                "bool" if dtype == "bool" else "str" if dtype == "str" else dtype)
    run.append(tables.STEPS, steps)
    run.finish()
    return run


def test_the_planner_predicts_the_mde_from_earlier_paired_runs(tmp_path):
    run = fake_paired_run(tmp_path, sd_own=0.08, rounds=30)
    noise = planner.cell_noise(tp, [run], 0)  # the QPS table
    assert sorted(noise["threads"]) == [1, 16] and (noise["df"] == 29).all()
    # a difference of two steps: 2 × 0.08²; each cell's estimate within chi²(29)'s 99.9 % range
    low, high = (scipy.stats.chi2.ppf(q, 29) / 29 * 2 * 0.08 ** 2 for q in (0.0005, 0.9995))
    assert noise["s2"].between(low, high).all()
    p = checks.resolve(tp, "quick", threads=[1, 16, 64], workloads=["oltp_point_select"], repeats=16, budget=0, target={})
    r = planner.predict(tp, p, noise)
    assert (r["rounds"], r["comparisons"]) == (16, 3)
    expected = stats.paired_mde(math.sqrt(float(noise["s2"].median())), 16, 3) * 100
    assert r["median"] == pytest.approx(expected, rel=0.25)
    assert planner.earlier_runs("thread_pool", tmp_path, host="elsewhere") == []


def test_the_planner_reads_a_runs_tables_once_until_they_change(tmp_path, monkeypatch):
    """A plan asks for each earlier run's tables once per metric and spread (47 reads of ≈ 1 s
    on five quick runs): read once per state of the run's tables."""
    run = fake_paired_run(tmp_path, sd_own=0.08, rounds=3)
    reads = []
    real = study_registry.paired_tables
    monkeypatch.setattr(planner, "judged", lambda study, r: reads.append(r.path) or real(study, r))
    first = planner.paired_tables(tp, run)
    assert planner.paired_tables(tp, Run.open(run.path)) is first and len(reads) == 1
    more = run.table(tables.STEPS).assign(step=lambda t: t["step"] + 1000, repeat=lambda t: t["repeat"] + 3)
    run.append(tables.STEPS, more)  # three more rounds written: read again, and they count
    again = planner.paired_tables(tp, run)
    assert len(reads) == 2 and len(again[0][1]) == 2 * len(first[0][1])


def test_the_planner_says_when_it_has_no_noise_to_predict_from(tmp_path):
    lines = planner.plan("thread_pool", "smoke", {}, tmp_path, allow_pilot=False)
    assert lines[0].startswith("thread_pool (smoke): paired design, 2 rounds × 2 cells × 2 arms")
    assert "No earlier paired run of this study on this host" in lines[1]
    lines = planner.plan("compression", "smoke", {}, tmp_path, allow_pilot=False)
    assert "No MDE prediction" in lines[1]
    lines = planner.plan("dbt3_plans", "smoke", {}, tmp_path, allow_pilot=False)
    assert lines[0].startswith("dbt3_plans (smoke): paired design, 2 rounds × 4 cells × 2 arms")
    assert "No earlier paired run of this study on this host" in lines[1]


def test_paired_analysis_of_a_run_finds_its_known_difference(tmp_path):
    run = fake_paired_run(tmp_path, sd_own=0.05, rounds=12, shift=math.log(1.2))
    steps = results.measured(run)
    assert analysis.is_paired(steps)
    arms = [Arm("base"), Arm("cand")]
    rel = analysis.compare_arms(steps, arms, by=["workload", "threads"], value="qps")
    assert stats.is_paired_table(rel) and (rel["verdict"] == "better").all()
    assert rel["ratio"].between(1.1, 1.3).all()
    # the same steps as independent repeats: the shared round noise (0.15) swamps +20 %
    unpaired = analysis.compare_arms(steps.drop(columns="pair"), arms, by=["workload", "threads"],
                                       value="qps")
    assert not stats.is_paired_table(unpaired) and (unpaired["mde_pct"] > rel["mde_pct"]).all()
    pairs = analysis.ratios_per_round(steps, arms)
    assert len(pairs) == 24 and np.allclose(np.exp(pairs["d"]), pairs["ratio"])


def test_calibration_on_a_runs_own_a_a_pairs(tmp_path):
    run = fake_paired_run(tmp_path, sd_own=0.07, rounds=16, cells=(1, 4, 16, 64), twin=True)
    steps = results.measured(run)
    arms = [Arm("base"), Arm("base (A/A)", twin_of="base")]
    d = aa.differences(steps, arms)
    assert d.shape == (16, 4)
    p = checks.resolve(tp, "smoke")
    cal = aa.calibration(steps, arms, p)
    assert cal["shift_pct"].tolist() == [0.0, 10.0, 20.0] and (cal["comparisons"] == 4).all()
    fpr, power10, power20 = cal["tables_any_verdict"][0], cal["cells_better"][1], cal["cells_better"][2]
    assert fpr <= 0.1 and power10 < power20 and power20 >= 0.8
    assert (cal["cells_worse"][1:] == 0).all()
    (line,) = aa.calibration_line(cal)
    assert line.startswith("- Judged on this run's own A/A noise (16 rounds, their labels swapped at random, 4 cells, Holm over 4)")
    assert aa.calibration(steps, [Arm("base"), Arm("base (A/A)")], p).empty  # no twin


def test_a_time_budget_stops_before_a_round_that_would_end_past_it(tmp_path):
    p = checks.resolve(tp, "quick", budget=30, target={})
    loop = Loop(tp, p, Run.create("thread_pool", {}, root=tmp_path))
    left = loop.deadline - time.monotonic()
    assert 29 * 60 < left <= 30 * 60  # the deadline is the budget from now
    loop.end = time.monotonic() + 12 * 60  # two 9-min rounds done: 12 min left (no profiled rounds to keep time for)
    assert not loop.out_of_time([9 * 60, 9 * 60])  # a third round as long as the mean fits
    loop.end = time.monotonic() + 8 * 60
    assert loop.out_of_time([9 * 60, 9 * 60])  # it would end past the budget: stop
    assert not loop.out_of_time([9 * 60])  # never before the two rounds a verdict needs
    fixed = checks.resolve(tp, "quick", budget=0, target={})  # 0: the profile's budget off
    assert Loop(tp, fixed, loop.run).deadline is None and fixed.budget == 0  # repeats instead
    assert planner.planned_rounds(tp, p) == int(30 * 60 // schedule.round_seconds(tp, p))


def test_the_planner_predicts_dbt3_per_query_from_its_executions(tmp_path):
    """DBT3's table is per query, from its executions' seconds (`paired_tables`): a query
    whose pairs differ by a known SD gets that noise, the prediction the paired MDE."""
    d3 = load("dbt3_plans")
    run = Run.create("dbt3_plans", {}, root=tmp_path)
    labels = [a.label for a in arms_of(d3, checks.resolve(d3, "smoke"))]
    run.update(design="paired", arms=[{"label": x} for x in labels])
    rng = np.random.default_rng(3)
    rows, step = [], 0
    for r in range(1, 21):
        for q, sd in ((3, 0.02), (5, 0.2)):
            shared = rng.normal(0, 0.3)
            for pos, arm in enumerate(labels):
                step += 1
                rows.append({"step": step, "phase": "measure", "repeat": r, "arm": arm, "query": q,
                             "order_of": "", "started_at": 0.0, "timed_out": False, "rows": 1,
                             "seconds": math.exp(shared + rng.normal(0, sd)), "handler_reads": 1,
                             "cold": False, "answer": "", "pair": (step + 1) // 2, "position": pos})
    run.append(d3.module.QUERIES, pd.DataFrame(rows))
    run.finish()
    noise = planner.cell_noise(d3, [run])
    s2 = dict(zip(noise["query"], noise["s2"]))
    assert list(noise.columns) == ["query", "s2", "df"] and (noise["df"] == 19).all()
    for q, sd in ((3, 0.02), (5, 0.2)):  # a difference of two executions: 2 sd², within chi²(19)
        assert scipy.stats.chi2.ppf(0.0005, 19) / 19 < s2[q] / (2 * sd ** 2) < scipy.stats.chi2.ppf(0.9995, 19) / 19
    r = planner.predict(d3, checks.resolve(d3, "smoke", queries=[3, 5]), noise)
    assert (r["rounds"], r["comparisons"]) == (2, 2) and r["min"] < r["max"]


def test_the_planner_predicts_the_positive_control_and_never_pilots_beside_a_measuring_run(tmp_path):
    fake_paired_run(tmp_path, sd_own=0.08, rounds=8)
    lines = planner.plan("thread_pool", "smoke", {"positive_control": {"pause_ms": 20, "every_s": 2}},
                         tmp_path, allow_pilot=False)
    control = [x for x in lines if x.startswith("  positive control, throughput (QPS):")]
    assert len(control) == 1 and control[0].endswith("; 2 comparisons)")  # two cells, the paused twin alone
    # a run this process is measuring: the planner neither learns from it nor pilots beside it
    from dbstudies.measure import ownership
    other = tmp_path / "elsewhere"
    ownership.create_run("versions", checks.resolve(load("versions"), "smoke"), other, "notebook")
    lines = planner.plan("versions", "smoke", {}, other, allow_pilot=True)
    assert "is measuring on this host" in lines[-1] and len(list(other.glob("versions/*"))) == 1
