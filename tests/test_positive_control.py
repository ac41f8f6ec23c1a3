"""The positive control (issue 35): a twin of the baseline whose server the driver pauses —
the parameter, the pauser on a real process, the arms it adds, what each metric must show
and the outcome words, and the smoke thread-pool run measured with it."""
from __future__ import annotations

import dataclasses
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from processes import wait_for
from report_checks import report_problems

from dbstudies.analysis import control
from dbstudies.core import errors
from dbstudies.kit.study import load
from dbstudies.kit.studykit import Arm, with_control
from dbstudies.measure import checks
from dbstudies.observe import pauses
from dbstudies.store.results import Run

PAUSE = {"pause_ms": 20, "every_s": 2}


def state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize("bad", [{"pause_ms": 20}, {"pause_ms": -1, "every_s": 2}, {"pause_ms": "x", "every_s": 1},
                                 {"pause_ms": 950, "every_s": 1}, [20, 2], {"pause_ms": 20, "every_s": 2, "x": 1}])
def test_a_bad_positive_control_is_refused_before_anything_runs(bad):
    with pytest.raises(errors.ParamError, match="positive_control"):
        checks.resolve(load("thread_pool"), "smoke", positive_control=bad)


def test_the_paused_twin_is_an_arm_after_the_baseline_and_not_the_aa_twin():
    p = checks.resolve(load("thread_pool"), "smoke", positive_control=PAUSE, aa_control=True)
    arms = with_control([Arm("base"), Arm("pool")], p)
    assert [a.label for a in arms] == ["base", "base (A/A)", "base" + pauses.SUFFIX, "pool"]
    assert [a.aa for a in arms] == [False, True, False, False]
    assert arms[2].pause == pauses.Pause(20.0, 2.0) and arms[2].twin_of == "base"
    assert control.control_arm(arms) is arms[2]
    assert with_control([Arm("base")], dataclasses.replace(p, positive_control=None, aa_control=False)) == [Arm("base")]


def test_the_pauser_stops_and_lets_go_of_a_real_process():
    child = subprocess.Popen(["sleep", "60"])
    try:
        pauser = pauses.Pauser(child.pid, pauses.Pause(300, 0.6), 10)  # first pause 0.3 s in
        pauser.start(time.monotonic(), 0)
        wait_for(lambda: state(child.pid) == "T", 10, "the process stopped")
        wait_for(lambda: state(child.pid) != "T", 10, "the process let go")
        wait_for(lambda: pauser.pauses, 10, "the pause recorded")
        pauser.stop()
        assert state(child.pid) != "T"
        first = pauser.pauses[0]
        assert first["paused_ms"] >= 300 and 0.3 <= first["at_s"] < 1.0
    finally:
        child.kill()
        child.wait()


def test_a_pauser_stopped_mid_pause_lets_the_process_go():
    child = subprocess.Popen(["sleep", "60"])
    try:
        pauser = pauses.Pauser(child.pid, pauses.Pause(60_000, 61), 120)  # a minute-long pause at 30.5 s
        pauser.start(time.monotonic() - 30.5, 0)
        wait_for(lambda: state(child.pid) == "T", 10, "the process stopped")
        pauser.stop()
        assert state(child.pid) != "T"
        assert len(pauser.pauses) == 1 and pauser.pauses[0]["paused_ms"] < 60_000
    finally:
        child.kill()
        child.wait()


def test_a_step_that_overruns_is_dosed_as_the_model_says():
    """The dose is fixed by the step's nominal duration, not by how long sysbench overran: no
    pause begins that could not end inside it, and none is cut short when the step ends late."""
    pause = pauses.Pause(150, 0.5)
    assert pause.starts(1.0) == [0.25, 0.75] and pause.starts(0.39) == [] and pause.starts(0.4) == [0.25]
    child = subprocess.Popen(["sleep", "60"])
    try:
        pauser = pauses.Pauser(child.pid, pause, 1.0)
        pauser.start(time.monotonic(), 0)
        wait_for(lambda: pauser.finished, 20, "the step's dose given")  # the step overruns: no stop yet
        assert state(child.pid) != "T"
        pauser.stop()
        assert len(pauser.pauses) == len(pause.starts(1.0))
        assert all(x["paused_ms"] >= 150 for x in pauser.pauses)
        assert all(x["at_s"] >= at for x, at in zip(pauser.pauses, pause.starts(1.0)))
    finally:
        child.kill()
        child.wait()


def cell(threads: int, events: int, p95: float, p99: float) -> dict:
    return {"workload": "w", "threads": threads, "paused_pct": 1.0, "pauses": 10.0, "events": events,
            "latency_p95_ms": p95, "latency_p99_ms": p99}


def test_what_a_pause_must_show_follows_from_its_size_and_the_transactions_it_delays():
    pause = pauses.Pause(20, 2)
    exp = pd.DataFrame([cell(1, 200_000, 0.1, 0.2),        # d = 0.005 %: hides from p95/p99
                        cell(64, 20_000, 5.0, 8.0),        # d = 3.2 %: p99 moves, p95 borderline
                        cell(256, 20_000, 90.0, 150.0),    # the pause shorter than p99
                        cell(512, 4_000, 5.0, 8.0)])       # d = 128 %: p50 moves too
    exp = exp.assign(delayed_pct=exp["threads"] * exp["pauses"] / exp["events"] * 100)
    by = pd.MultiIndex.from_tuples([("w", t) for t in (1, 64, 256, 512)], names=["workload", "threads"])
    mde = {m: pd.Series([0.5, 10.0, 10.0, 10.0], index=by) for m in ("qps", "p95", "p99", "tail")}
    e = control.expectations(exp, pause, mde).set_index(["threads", "metric"])["expected"]
    assert e[(1, "qps")] == "yes" and e[(64, "qps")] == "under the MDE"   # 1 % against MDEs 0.5 % and 10 %
    assert e[(1, "p99")] == "no" and e[(64, "p99")] == "yes" and e[(64, "p95")] == "borderline"
    # the tail ratio moves where p99 does, while p50 stays (under a quarter of the transactions delayed)
    assert e[(64, "tail")] == "yes" and e[(1, "tail")] == "no" and e[(256, "tail")] == "no"
    assert e[(512, "p99")] == "yes" and e[(512, "tail")] == "borderline"
    # the report states the model the expectations come from, the open loop's for the latency study
    found = pd.DataFrame({"workload": ["w"], "threads": [8], "metric": ["p99 latency"]})
    closed, opened = control.model(pause, found), control.model(pause, found.assign(rate=100.0))
    seconds = control.model(pause, found.assign(metric=control.WORDS["tps"]))
    assert "closed loop" in closed and "one per client thread" in closed and "1 %" in closed
    assert "open loop" in opened and "s / (1 − ρ)" in opened and "closed loop" not in opened
    assert "stall seconds rise by about one per pause" in seconds and "none stalls" in seconds


def test_the_checkpoint_studys_seconds_see_a_pause_only_where_a_second_can_hold_it():
    exp = pd.DataFrame([cell(16, 50_000, 5.0, 8.0), cell(64, 50_000, 20.0, 30.0)])
    exp = exp.assign(delayed_pct=exp["threads"] * exp["pauses"] / exp["events"] * 100, paused_pct=20.0)
    by = pd.MultiIndex.from_tuples([("w", 16), ("w", 64)], names=["workload", "threads"])
    own = pd.Series([0.0, 4.0], index=by)         # the baseline's median stall seconds
    mde = {m: pd.Series([10.0, 10.0], index=by) for m in ("tps", "p99", "stalls")}

    def expected(pause):
        e = control.second_expectations(exp, own, pause, mde, 0.5)
        return e.set_index(["threads", "metric"])["expected"].to_dict()
    # 200 ms every second: every second holds 200 ms, the median second drops by 20 % ≥ MDE;
    # a second needs 500 ms of pause to stall (stall_fraction 0.5), and with a pause in every
    # second the step's median drops with them: no stall second (measured: 600 ms every 1 s
    # lowered the median second 61 % and stalled none); p99 as in
    # the closed loop: 16 threads × 10 pauses delay 0.3 % of 50,000 transactions, under its 1 %
    e = expected(pauses.Pause(200, 1))
    assert e[(16, "tps")] == "yes" and e[(16, "stalls")] == "no" and e[(16, "p99")] == "no"
    # 1.2 s every 10 s always empties a second: 10 pauses a step over 1 + 0 stall s (+1,000 %)
    # and over 1 + 4 (+200 %) both reach the MDE; fewer than half the seconds touched: the median holds
    e = expected(pauses.Pause(1200, 10))
    assert e[(16, "stalls")] == "yes" and e[(64, "stalls")] == "yes" and e[(16, "tps")] == "no"
    # 700 ms every 2 s may or may not fill a second, depending on where it falls
    assert expected(pauses.Pause(700, 2))[(16, "stalls")] == "borderline"


def test_outcomes_count_misses_and_unexplained_differences():
    found = pd.DataFrame([
        {"workload": "w", "threads": 1, "metric": "tail ratio", "expected": "yes", "verdict": "worse", "outcome": "found"},
        {"workload": "w", "threads": 8, "metric": "tail ratio", "expected": "yes", "verdict": "draw", "outcome": "missed"},
        {"workload": "w", "threads": 1, "metric": "throughput (QPS)", "expected": "no", "verdict": "better",
         "outcome": "unexplained"},
        {"workload": "w", "threads": 4, "metric": "throughput (QPS)", "expected": "under the MDE",
         "verdict": "worse", "outcome": control.outcome("under the MDE", "worse")}])
    text = "\n".join(control.lines(found, pauses.Pause(20, 2)))
    assert "found by tail ratio in 1 of the 2 cells where it must show — missed at w 8" in text
    assert ("throughput (QPS): no cell where it must show; found, though smaller than the MDE promises, "
            "at w 4; better, which no pause explains, at w 1") in text
    assert control.outcome("yes", "better") == "unexplained" and control.outcome("borderline", "worse") == "borderline"
    assert control.outcome("no", "worse") == "beyond the model"


@pytest.mark.server
@pytest.mark.notebook
def test_the_smoke_thread_pool_run_pauses_its_control_and_reports_it(smoke_run):
    p, run_dir = smoke_run("thread_pool")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    run = Run(run_dir)
    every = run.table("steps")
    mine = every[every["arm"].str.endswith(pauses.SUFFIX)]
    steps = every[every["phase"] == "measure"]
    paused = steps[steps["arm"].str.endswith(pauses.SUFFIX)]
    assert len(paused) == len(steps[steps["arm"] == run.metadata["arms"][0]["label"]]) > 0
    stops = run.table("pauses")
    # the control's measured steps (and attempts discarded on a busy host), not its warm-ups
    assert set(stops["step"]) == set(mine.loc[mine["phase"].isin(["measure", "busy"]), "step"])
    # each dosed as the model says, however long its step ran: every pause whole, none past the step
    p = run.params(load("thread_pool"))
    pause = pauses.parse(p.positive_control)
    dose = len(pause.starts(p.duration))
    assert (stops.groupby("step").size() == dose).all() and dose > 0
    assert (stops["paused_ms"] >= pause.pause_ms).all()
    hist = run.table("histograms")
    slow = hist[hist["value_ms"] >= 200].groupby("step")["count"].sum()
    # a pause delays every transaction in flight when it begins (the first may come while
    # sysbench still connects; the last is well inside the step)
    assert (slow.reindex(paused["step"], fill_value=0) >= 1).all()
    html = (run_dir / "report.html").read_text()
    assert "Positive control (the baseline paused 200 ms every 1 s (20 % of the time))" in html
    assert "the paused share (MDE" in html
    assert report_problems(html) == []
