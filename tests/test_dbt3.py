"""The DBT3 power-test study: parameters checked before anything starts, the smoke run
(notebook, once per session), and timeouts recorded as censored, never as numbers."""
import math

import pytest

from dbstudies.params import ParamError
from dbstudies.results import Run
from dbstudies.study import load

d3 = load("dbt3_plans")


def test_bad_parameters_are_refused_together():
    with pytest.raises(ParamError) as e:
        d3.resolve("smoke", queries=[0, 23], engine="Heap", timeout=0, scale_factor=-1,
                   candidates={"a": {"optimizer_use_condition_selectivity": 9}})
    text = "\n".join(e.value.problems)
    for part in ("queries: distinct query numbers 1…22", "engine: one of InnoDB, MyISAM, Aria",
                 "timeout: must be > 0", "scale_factor: must be > 0",
                 "candidates[a]: mariadb-10.11 refuses a value"):
        assert part in text, text


@pytest.mark.notebook
@pytest.mark.server
def test_smoke_run_times_queries_records_plans_and_loads(smoke_run):
    proc, run_dir = smoke_run("dbt3_plans.ipynb")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = Run.open(run_dir)
    ex = d3.executions(run)
    assert len(ex) == 16 and not ex["timed_out"].any() and (ex["seconds"] > 0).all()
    assert set(ex["query"]) == {3, 5, 7, 13} and (ex["handler_reads"] > 0).all()
    warm = run.table(d3.QUERIES)
    assert (warm["phase"] == "warmup").sum() == 16  # every query once per block, unmeasured
    plans = run.table(d3.PLANS)
    assert set(zip(plans["arm"], plans["query"])) == {(a.label, q) for a in d3.arms(d3.resolve("smoke"))
                                                      for q in (3, 5, 7, 13)}
    assert len(run.table(d3.LOADS)) == 8
    used = {s["label"]: s["global_variables"] for s in run.metadata["servers"]}
    assert used["selectivity 1"]["optimizer_use_condition_selectivity"] == "1"
    html = (run.path / "report.html").read_text()
    assert html.count("<img") == 3 and "Traceback" not in html
    assert "&lt;derived2&gt;" in html  # plan table cells are text, not tags
    assert "selectivity 1 vs baseline" in html  # the per-query table
    assert "Geometric mean over 4 queries" in proc.stdout and "Join orders differ" in proc.stdout


@pytest.mark.server
def test_a_timeout_is_censored_never_a_number(tmp_path):
    p = d3.resolve("smoke", queries=[13], timeout=0.001, repeats=2)
    run = d3.open_run(p, root=tmp_path)
    d3.measure(p, run, progress=False)
    ex = d3.executions(run)
    assert ex["timed_out"].all() and ex["seconds"].isna().all()
    summ = d3.summary(ex)
    rel = d3.relative(ex, p)
    assert rel["verdict"].tolist() == ["timeout (censored: not tested)"]
    table = d3.query_table(summ, rel, p)
    assert table.iloc[0].tolist()[:3] == ["Q13", ">0.001", ">0.001"]
    geo = d3.geomean(ex, p)
    assert geo.empty  # no repeat without a timeout: nothing to compare
    text = d3.conclusion(rel, geo, d3.plan_diff(run, p), p)
    assert "1 timeout (censored: not tested)" in text and not math.isnan(len(text))
