"""Open-loop load (dbs_openloop.lua): latency from the scheduled start, so a stall is charged
to every transaction due during it; a rate the server cannot keep up with is said so."""
import os
import signal
import threading

import pandas as pd
import pytest

from dbstudies.core.errors import ParamError
from dbstudies.workloads import sysbench, sysbench_output

RECORDED = "\n".join([
    '{"kind":"interval","time":1.000,"interval":1.0,"threads":2,"events":3}',
    '{"kind":"ol_queue","time":1.000,"due":3,"started":3,"queued":0,"lag_ms":0.000,"dropped":0}',
    '{"kind":"ol_interval","thread":0,"second":1,"n":2,"sum_ms":3.0,"wait_sum_ms":0.5,"max_ms":2.0,"hist":[[1,1],[2,1]]}',
    '{"kind":"ol_interval","thread":1,"second":1,"n":1,"sum_ms":1.0,"wait_sum_ms":0,"max_ms":1.0,"hist":[[1,1]]}',
    '{"kind":"ol_queue","time":2.000,"due":7,"started":5,"queued":2,"lag_ms":400.000,"dropped":0}',
    '{"kind":"ol_interval","thread":0,"second":2,"n":1,"sum_ms":900.0,"wait_sum_ms":899.0,"max_ms":900.0,"hist":[[900,1]]}',
])


def test_open_loop_lines_become_seconds_and_a_step_summary():
    sustained = sysbench_output.parse_open_loop(
        RECORDED + '\n{"kind":"ol_end","due":7,"started":7,"unstarted":0,"dropped":0,"window_s":2,"unstarted_hist":[]}',
        rate=3.5, duration=2)
    s = sustained.seconds.set_index("second")
    assert s["arrivals"].tolist() == [3, 4] and s["completed"].tolist() == [3, 1]
    assert s.loc[1, "latency_avg_ms"] == pytest.approx(4 / 3) and s.loc[2, "lag_ms"] == 400
    assert s.loc[1, "latency_p50_ms"] == 1 and s.loc[1, "latency_p99_ms"] == 2
    t = sustained.totals
    assert t["sustained"] and not t["lower_bound"] and t["completed"] == 4
    assert t["achieved_rate"] == 2 and t["arrival_rate"] == 3.5 and t["latency_p99_ms"] == 900
    # three arrivals still waiting at the end (the longest for 1.5 s): not sustained, and the
    # percentiles count their waits so far, as lower bounds
    behind = sysbench_output.parse_open_loop(
        RECORDED + '\n{"kind":"ol_end","due":7,"started":4,"unstarted":3,"dropped":0,'
                   '"unstarted_hist":[[1500,3]]}', rate=3.5, duration=2)
    b = behind.totals
    assert not b["sustained"] and b["lower_bound"] and b["end_lag_s"] == 1.5
    assert b["latency_p50_ms"] == 900 and b["latency_p99_ms"] == 1500
    with pytest.raises(ValueError, match="no open-loop end line"):
        sysbench_output.parse_open_loop(RECORDED, rate=3.5, duration=2)


class _Unreached:
    """A target the checks below never reach: a bad rate is refused before anything connects."""
    def sysbench_connection(self):
        return ["--mysql-socket=/nonexistent"]


def test_a_bad_rate_is_a_parameter_error_before_sysbench_starts():
    sb = sysbench.Sysbench(_Unreached())
    with pytest.raises(ParamError) as e:
        sb.run("oltp_point_select", threads=1, duration=1, rate=-5, arrivals="bursty")
    assert "rate must be a positive" in str(e.value) and "'bursty'" in str(e.value)
    assert sb.calls == []


@pytest.mark.server
def test_a_two_second_stall_is_charged_to_every_transaction_due_during_it(server):
    """SIGSTOP the server for 2 s in a 200 tx/s step: about 400 of ≈ 1,200 arrivals fall in
    the pause, so p99 from the scheduled start is ≈ 2 s. Closed-loop, with the same pause,
    each connection carries it once: p99 stays far lower. Both steps then sustain their load
    again (the backlog clears in well under a second)."""
    sb = sysbench.Sysbench(server, tables=1, table_size=1000)
    sb.prepare("oltp_point_select")
    pid = server.pid

    def pause_after_two_seconds():
        started = threading.Event()

        def on_interval(row: pd.DataFrame) -> None:
            if int(row["second"].iloc[0]) >= 2 and not started.is_set():
                started.set()
                os.kill(pid, signal.SIGSTOP)
                threading.Timer(2.0, os.kill, (pid, signal.SIGCONT)).start()
        return on_interval

    try:
        opened = sb.run("oltp_point_select", threads=4, duration=6, seed=1, rate=200,
                        on_interval=pause_after_two_seconds())
        closed = sb.run("oltp_point_select", threads=4, duration=6, seed=1,
                        on_interval=pause_after_two_seconds())
    finally:
        os.kill(pid, signal.SIGCONT)
    ol = opened.open_loop
    t = ol.totals
    assert t["sustained"] and t["arrivals"] == pytest.approx(200 * opened.totals["seconds"], rel=0.15)
    assert t["completed"] >= t["arrivals"] - 4  # at most the transactions in flight at the end
    assert t["latency_p99_ms"] >= 1000, t
    # the seconds after the pause show the queue it left and the lateness it caused
    assert ol.seconds["lag_ms"].max() >= 1000 and ol.seconds["queued"].max() >= 100
    assert ol.seconds["latency_max_ms"].max() >= 1800
    # closed loop: the same pause hides in ≤ 4 slow transactions among thousands
    assert closed.open_loop is None and closed.totals["events"] > 20 * 4
    assert closed.totals["latency_p99_ms"] < t["latency_p99_ms"] / 5, (closed.totals, t)


@pytest.mark.server
def test_a_rate_above_capacity_is_reported_as_not_sustained(server):
    sb = sysbench.Sysbench(server, tables=1, table_size=1000)
    sb.prepare("oltp_point_select")
    res = sb.run("oltp_point_select", threads=1, duration=3, rate=200_000)
    t = res.open_loop.totals
    assert not t["sustained"] and t["lower_bound"], t
    assert t["achieved_rate"] < 0.5 * t["offered_rate"] and t["unstarted"] > t["completed"]
    assert t["end_lag_s"] > 1 and t["latency_p50_ms"] > 100
