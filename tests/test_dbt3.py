"""The DBT3 power-test study: parameters checked before anything starts, the smoke run
(notebook, once per session), and timeouts recorded as censored, never as numbers."""
import dataclasses

import pytest

from dbstudies import tpch
from dbstudies.kit.study import load
from dbstudies.kit.studykit import arms_of
from dbstudies.measure import checks, experiment, ownership
from dbstudies.store.params import ParamError
from dbstudies.store.results import Run
from dbstudies.studies.dbt3_plans import queries as qa
from dbstudies.workloads import sql

d3 = load("dbt3_plans")


def test_bad_parameters_are_refused_together():
    with pytest.raises(ParamError) as e:
        checks.resolve(d3, "smoke", queries=[0, 23], engine="Heap", timeout=0, scale_factor=-1,
                   candidates={"a": {"optimizer_use_condition_selectivity": 9}})
    text = "\n".join(e.value.problems)
    for part in ("queries: distinct query numbers 1…22", "engine: one of InnoDB, MyISAM, Aria",
                 "timeout: must be > 0", "scale_factor: must be > 0",
                 "candidates[a]: mariadb-10.11 refuses a value"):
        assert part in text, text


@pytest.mark.notebook
@pytest.mark.server
def test_smoke_run_times_queries_records_plans_and_loads(smoke_run):
    proc, run_dir = smoke_run("dbt3_plans")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = Run.open(run_dir)
    ex = d3.executions(run)
    assert len(ex) == 16 and not ex["timed_out"].any() and (ex["seconds"] > 0).all()
    assert set(ex["query"]) == {3, 5, 7, 13} and (ex["handler_reads"] > 0).all()
    assert (ex["order_of"] == qa.OWN_PLAN).all()
    # the forced-order phase: every query whose orders differ (Q3 does at SF 0.01 on 10.11,
    # selectivity 1 vs 4), on both candidates, with its own plan and the other's forced
    smoke = checks.resolve(d3, "smoke")
    differ = [int(q[1:]) for q in qa.plan_diff(run.table(d3.module.PLANS), arms_of(d3, smoke), smoke.queries)
              .query("differs")["query"]]
    assert differ, "no join order differs: the smoke run no longer exercises the forced phase"
    tried = run.table(d3.module.FORCED)
    assert sorted(zip(tried["query"], tried["arm"])) == sorted((q, a) for q in differ
                                                               for a in ("selectivity 1", "selectivity 4 (default)"))
    assert tried["forced"].all() and (tried["plan_in_effect"] != tried["own_order"]).all()
    fx = d3.executions(run, "forced")
    assert len(fx) == 2 * 2 * 2 * len(differ)  # repeats × candidates × (own, forced) × queries
    assert set(fx["order_of"]) == {qa.OWN_PLAN, "selectivity 1", "selectivity 4 (default)"}
    warm = run.table(d3.module.QUERIES)
    # every cell once per block, unmeasured: 4 queries × 4 blocks, then 2 variants × 4 blocks
    assert (warm["phase"] == "warmup").sum() == 16 + len(fx)
    plans = run.table(d3.module.PLANS)
    assert set(zip(plans["arm"], plans["query"])) == {(a.label, q) for a in arms_of(d3, checks.resolve(d3, "smoke"))
                                                      for q in (3, 5, 7, 13)}
    # paired design: both candidates on one shared server (loaded once), the candidate's
    # setting given to its sessions, never to the server's start
    assert len(run.table(d3.LOADS)) == 8 and run.metadata["design"] == "paired"
    servers = {s["label"]: s for s in run.metadata["servers"]}
    assert servers["selectivity 1"]["session"] == {"optimizer_use_condition_selectivity": 1}
    assert servers["selectivity 1"]["global_variables"]["optimizer_use_condition_selectivity"] == "4"
    assert len({s["datadir"] for s in servers.values()}) == 1
    # every measured execution in a pair with the other candidate's, back to back
    for _, pair in ex.sort_values("step").groupby("pair"):
        assert sorted(pair["arm"]) == ["selectivity 1", "selectivity 4 (default)"]
        assert pair["query"].nunique() == 1 and pair["step"].diff().dropna().eq(1).all()
    assert ex["pair"].nunique() == 8 and (fx["pair"] > ex["pair"].max()).all()
    rel = qa.relative(ex, arms_of(d3, smoke), smoke)
    assert rel["n_baseline"].eq(2).all() and "sd_diff" in rel  # paired: 2 rounds per query
    html = (run.path / "report.html").read_text()
    assert html.count("<img") == 5 and "Traceback" not in html
    assert (run.path / "figures" / "seconds_pairs.png").exists()  # the pairs behind the verdicts
    assert "forced vs own plan" in html and "with the join order of selectivity 1 forced" in html
    assert "&lt;derived2&gt;" in html  # plan table cells are text, not tags
    assert "selectivity 1 vs selectivity 4 (default): % of its time" in html and "handler reads" in html
    assert "Geometric mean over 4 queries" in proc.stdout and "Join orders differ" in proc.stdout
    # every measured execution's rows checked against the reference answers (SF 0.01)
    n = 16 + len(fx)
    assert f"Answers: {n} of {n} checked executions match DuckDB's reference answers at SF 0.01\n" in proc.stdout
    assert (run.table(d3.module.QUERIES).query("phase != 'warmup'")["answer"] == "ok").all()


@pytest.mark.server
def test_a_setting_no_session_can_take_is_refused_before_the_load(tmp_path):
    p = checks.resolve(d3, "smoke", candidates={"a": {}, "b": {"innodb_buffer_pool_size": "64M"}})
    run = ownership.open_run(d3, p, root=tmp_path)
    with pytest.raises(ParamError, match="b: innodb_buffer_pool_size = 64M: .*GLOBAL.*design blocks"):
        experiment.measure(d3, p, run, progress=False)
    assert run.table(d3.LOADS).empty and run.table(d3.module.QUERIES).empty


@pytest.mark.server
@pytest.mark.parametrize("design", ["paired", "blocks"])
def test_a_timeout_is_censored_never_a_number(tmp_path, design):
    p = checks.resolve(d3, "smoke", queries=[13], timeout=0.001, repeats=2, design=design)
    run = ownership.open_run(d3, p, root=tmp_path)
    experiment.measure(d3, p, run, progress=False)
    ex = d3.executions(run)
    assert ex["timed_out"].all() and ex["seconds"].isna().all()
    summ = qa.summary(ex)
    arms = arms_of(d3, p)
    rel = qa.relative(ex, arms, p)
    assert rel["verdict"].tolist() == ["timeout (censored: not tested)"]
    table = qa.query_table(summ, rel, arms, p)
    assert table.iloc[0].tolist()[:3] == ["Q13", ">0.001", ">0.001"]
    geo = qa.geomean(ex, arms, p)
    assert geo.empty  # no repeat without a timeout: nothing to compare
    fo = qa.forced(run.table(d3.module.FORCED), d3.executions(run, "forced"), p)
    text = qa.conclusion(rel, geo, qa.plan_diff(run.table(d3.module.PLANS), arms, p.queries), arms, p, fo,
                         d3.answers_line(run, p))
    assert "1 timeout (censored: not tested)" in text
    assert "Answers: 0 of 0 checked executions" in text  # a timed-out execution has no rows to check
    # a scale factor without reference answers: said, not silently skipped
    assert d3.answers_line(run, dataclasses.replace(p, scale_factor=0.5)) == (
        "Answers not checked: DuckDB has reference answers for scale factors 0.01, 0.1, 1 only, not 0.5.")


@pytest.mark.server
def test_the_forced_phase_forces_verifies_and_reports_what_it_cannot_force(tpch_server, tmp_path):
    """On a loaded server: plans where candidate B (said to) join Q3 from lineitem and Q21
    differently. A forces B's Q3 order (EXPLAIN shows it) and runs it; Q21's other order sits
    in semi-joined subqueries and is reported as not forced, never timed."""
    import pandas as pd

    from dbstudies.measure.context import Context
    p = checks.resolve(d3, "smoke", queries=[3, 21, 6])
    a, b = arms_of(d3, p)
    run = ownership.open_run(d3, p, root=tmp_path)
    with sql.Session(tpch_server, "tpch") as s:
        real = {q: sql.join_order(s.explain(tpch.queries()[q])) for q in (3, 21, 6)}
    rows = []
    for q, order in real.items():
        rows += [dict(t, arm=a.label, query=q) for t in order]
        other = list(reversed(order)) if q != 6 else order  # Q6: one table, the same plan
        rows += [dict(t, arm=b.label, query=q, position=i + 1) for i, t in enumerate(other)]
    plans = pd.DataFrame(rows).fillna({"key": "", "access_type": ""})
    run.append(d3.module.PLANS, plans[list(d3.module.PLANS.columns)])
    cells = d3.follow_up(run, p)
    assert cells == [{"query": 3, "order_of": a.label}, {"query": 3, "order_of": b.label},
                     {"query": 21, "order_of": a.label}, {"query": 21, "order_of": b.label}]
    ctx = Context(p, run, tpch_server, None, arm=a, repeat=1)
    for step, cell in enumerate(cells, 1):
        d3.step(ctx, {**cell, "step": step})
    tried = run.table(d3.module.FORCED).set_index("query")
    wanted = " ".join(t["table"] for t in reversed(real[3]))
    assert tried.loc[3, "forced"] and tried.loc[3, "plan_in_effect"] == wanted
    assert "STRAIGHT_JOIN" in tried.loc[3, "sql"]
    assert not tried.loc[21, "forced"] and "semi-join" in tried.loc[21, "reason"]
    done = run.table(d3.module.QUERIES)
    assert sorted(zip(done["query"], done["order_of"])) == [(3, ""), (3, b.label), (21, "")]
    assert (done["phase"] == "forced").all() and not done["timed_out"].any()
    assert done[done["query"] == 3]["rows"].nunique() == 1  # the forced order, the same answer size
