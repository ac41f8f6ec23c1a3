"""A comparison is declared once (`dbstudies.core.comparisons`): one record added to a study kind's
list reaches the paired tables, the verdicts and their words, the target check, the A/A
control and a replication, with nothing else written."""
from __future__ import annotations

import pytest
from test_precision import QUICK

from dbstudies import analysis
from dbstudies.analysis import replication, sysbench_answer
from dbstudies.analysis.said import answer_text
from dbstudies.core import comparisons
from dbstudies.core.errors import ParamError
from dbstudies.kit import study as study_registry
from dbstudies.kit import studykit as S
from dbstudies.kit.study import load
from dbstudies.measure import checks
from dbstudies.store.results import Run

# a comparison the sysbench studies do not have: the mean latency of a step (sysbench's avg)
MEAN = comparisons.Comparison("mean", "latency_avg_ms", False, "mean latency", "mean")


@pytest.fixture
def with_mean(monkeypatch):
    """The sysbench kind's list with one more comparison — the one place it is written."""
    monkeypatch.setattr(S.SysbenchParams, "COMPARISONS", (*comparisons.SYSBENCH, MEAN))


def test_a_comparison_added_to_the_kind_reaches_every_view(with_mean):
    tp = load("thread_pool")
    p = checks.resolve_cell(tp, {"run_dir": str(QUICK)})
    run = Run.open(QUICK)
    # the paired tables the loop, the planner and a replication judge
    words, frame, by, column = study_registry.paired_tables(tp, run)["mean"]
    assert (words, by, column) == ("mean latency", ["workload", "threads"], "latency_avg_ms") and len(frame)
    # the answer: a table, a verdict and its words
    said = tp.answer(run, p)
    assert said.verdicts["mean latency"] == "mean" and len(said["mean"]) == 8
    assert set(said["mean"]["verdict"]) <= {"better", "worse", "draw"}
    assert "**Mean latency** against one-thread-per-connection" in answer_text(said).lead + answer_text(said).more
    # a target may name it (and still nothing else)
    assert checks.resolve(tp, "quick", target={"mean": 0.2}, budget=30).target == {"mean": 0.2}
    with pytest.raises(ParamError, match=r"\(qps, p95, p99, tail, mean\)"):
        checks.resolve(tp, "quick", target={"p90": 0.2}, budget=30)
    # a replication compares its effects
    assert "mean" in replication.effects(tp, run)


def test_the_a_a_control_calibrates_an_added_comparison(with_mean):
    """The quick run's second arm read as the baseline's twin: the A/A calibration of every
    judged comparison but the first (which has the A/A table) includes the new one."""
    tp, run = load("thread_pool"), Run.open(QUICK)
    p = checks.resolve_cell(tp, {"run_dir": str(QUICK)})
    base, cand = (a["label"] for a in run.metadata["arms"])
    arms = [S.Arm(base), S.Arm(cand, twin_of=base)]

    def relative(steps, p, metric="qps", *, aa=False):
        return analysis.relative(steps, arms, p, metric, aa=aa)
    t = sysbench_answer.tables(run, p, arms, relative)
    assert set(t["calibrations"]) == {"p95", "p99", "tail", "server_cpu", "mean"}
    assert t["calibrations"]["mean"]["shift_pct"].tolist() == [0.0, 10.0, 20.0]
    assert len(t["aa"]) == 8  # the A/A table: the first comparison, QPS


def test_without_the_record_nothing_knows_it():
    tp = load("thread_pool")
    with pytest.raises(ParamError, match=r"target: 'mean' is not one of this study's tables \(qps, p95, p99, tail\)"):
        checks.resolve(tp, "quick", target={"mean": 0.2}, budget=30)
    assert comparisons.verdicts(S.SysbenchParams.COMPARISONS) == {
        "throughput (QPS)": "qps", "p50 latency": "p50", "p95 latency": "p95", "p99 latency": "p99",
        "tail ratio (p99 ÷ p50)": "tail", "server CPU per transaction": "server_cpu", "A/A control (QPS)": "aa"}
