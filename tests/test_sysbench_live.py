"""A real few-second sysbench run against a private server, with the sampler on."""
import pytest
from conftest import FIXTURES

from dbstudies.observe import probes
from dbstudies.observe.probes import Sampler
from dbstudies.workloads import sysbench

pytestmark = pytest.mark.server


def test_prepare_run_sample_cleanup(server):
    sb = sysbench.Sysbench(server, tables=2, table_size=500)
    sb.prepare(threads=2)
    assert server.query("SELECT COUNT(*) FROM sbtest.sbtest2") == [(500,)]
    s = Sampler(server)
    res = sb.run("oltp_read_only", threads=2, duration=3, seed=42, observer=s)
    # one report per second from the first on (sysbench may drop the last one when it coincides
    # with the end, and a slow host may overrun by one)
    assert res.intervals["second"].tolist()[:2] == [1, 2] and len(res.intervals) <= 4
    assert (res.intervals["tps"] > 0).all()
    t = res.totals
    assert t["events"] == res.histogram["count"].sum() > 0 and t["errors"] == 0
    assert 0 < t["latency_p50_ms"] <= t["latency_p95_ms"] <= t["latency_p99_ms"]
    assert t["seconds"] > 0 and "--time=3" in res.argv  # how long it ran past 3 s is the host's business
    assert "--rand-seed=42" in res.argv and sb.calls[-1]["argv"] == res.argv
    # samples at t0, t0+1s, …: one per second plus the baseline, aligned with the intervals
    frame = s.frame()
    seconds = sorted(frame["second"].unique())
    assert seconds[:3] == [0, 1, 2] and max(seconds) <= t["seconds"] + 1.5  # until sysbench ended
    assert {"Questions", "Threads_connected", probes.CPU_SERVER, probes.CPU_CLIENT} <= set(frame["variable"])
    assert frame["offset_s"].max() < t["seconds"] + 1.5
    r = probes.rates(frame)
    assert (r.loc[1:2, "Questions"] > 0).all()
    assert r.loc[1:2, "cpu_server_pct"].mean() > 1
    # the server's count of statements agrees with what sysbench says it sent — a state, not one
    # second's timing (a second of the sampler and one of sysbench are not the same second: they
    # once differed by 25.5 %): from the sampler's baseline to after the run, Questions grew by
    # sysbench's queries, plus the sampler's own statements and this one
    base = frame[(frame["second"] == 0) & (frame["variable"] == "Questions")]["value"].iloc[0]
    grew = float(server.query("SHOW GLOBAL STATUS LIKE 'Questions'")[0][1]) - base
    sent = t["qps"] * t["seconds"]
    assert sent * 0.99 <= grew <= sent + len(seconds) + 20  # measured: sent + 9 with 4 samples, three times
    sb.cleanup()
    assert server.query("SHOW TABLES FROM sbtest") == []


def test_failing_sysbench_raises_with_argv_and_stderr(server):
    sb = sysbench.Sysbench(server, db="no_such_db")
    with pytest.raises(sysbench.SysbenchError) as e:
        sb.run("oltp_point_select", threads=1, duration=1)
    msg = str(e.value)
    assert "--mysql-db=no_such_db" in msg and "Unknown database" in msg
    assert e.value.returncode not in (0, None)


LEDGER = FIXTURES / "lua" / "multifile" / "ledger.lua"


def test_a_multi_file_benchmark_with_its_own_prepare_options_and_report_hooks_runs(server):
    """A benchmark in two files (a module beside it), its own options (--scale), a parallel
    prepare that pauses inside, and report hooks of its own (CSV): our per-second capture
    stays ours and its own lines are left out."""
    sb = sysbench.Sysbench(server, script_options={"--scale": 2, "--pause-ms": 300})
    sb.prepare(str(LEDGER), threads=2)
    assert server.query("SELECT COUNT(*) FROM sbtest.ledger_account") == [(2000,)]
    res = sb.run(str(LEDGER), threads=2, duration=3, seed=7)
    assert res.intervals["second"].tolist() in ([1, 2, 3], [1, 2])
    assert (res.intervals["tps"] > 0).all() and res.totals["errors"] == 0
    assert res.totals["events"] == res.histogram["count"].sum() > 0
    assert "ledger: done" not in res.stdout  # its cumulative hook was replaced by ours
    assert "--scale=2" in res.argv
    sb.cleanup(str(LEDGER))
    assert server.query("SHOW TABLES FROM sbtest") == []
