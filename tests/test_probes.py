"""The sampler's arithmetic on recorded samples: CPU of server and client, host load."""
import os

import pytest

from dbstudies.observe import counters, probes
from dbstudies.observe.counters import HOST_BUSY, HOST_STEAL, HOST_TOTAL
from dbstudies.observe.probes import CPU_CLIENT, CPU_SERVER, CPU_SIBLINGS, Sampler


def recorded(rows):
    s = Sampler(server=None)
    s.rows = [(k, k * 1.0, var, value) for k, var, value in rows]
    return s


def test_host_load_is_what_others_used_beyond_server_and_client():
    # 2 CPUs for 2 s = 4 CPU-seconds; all busy 3 s, of which server 1.5 and client 0.5
    s = recorded([(0, CPU_SERVER, 10.0), (0, CPU_CLIENT, 5.0), (0, HOST_TOTAL, 100.0),
                  (0, HOST_BUSY, 50.0), (0, HOST_STEAL, 1.0),
                  (2, CPU_SERVER, 11.5), (2, CPU_CLIENT, 5.5), (2, HOST_TOTAL, 104.0),
                  (2, HOST_BUSY, 53.0), (2, HOST_STEAL, 1.2)])
    load = s.host_load()
    assert load["other_pct"] == pytest.approx(25.0)   # (3 - 1.5 - 0.5) / 4
    assert load["steal_pct"] == pytest.approx(5.0)    # 0.2 / 4
    assert s.mean_cpu() == {CPU_SERVER: pytest.approx(75.0), CPU_CLIENT: pytest.approx(25.0)}


def test_foreign_load_leaves_the_runs_other_servers_out():
    # as above, and the run's two idle servers used 0.4 CPU-seconds: foreign processes 0.6 of 4
    rows = [(0, CPU_SERVER, 10.0), (0, CPU_CLIENT, 5.0), (0, CPU_SIBLINGS, 7.0), (0, HOST_TOTAL, 100.0),
            (0, HOST_BUSY, 50.0), (0, HOST_STEAL, 1.0),
            (2, CPU_SERVER, 11.5), (2, CPU_CLIENT, 5.5), (2, CPU_SIBLINGS, 7.4), (2, HOST_TOTAL, 104.0),
            (2, HOST_BUSY, 53.0), (2, HOST_STEAL, 1.2)]
    load = recorded(rows).host_load()
    assert load["other_pct"] == pytest.approx(25.0) and load["foreign_pct"] == pytest.approx(15.0)
    # a sibling gone before the last sample (no sum there): "other" stays, "foreign" is not said
    lost = recorded([r for r in rows if not (r[0] == 2 and r[1] == CPU_SIBLINGS)]).host_load()
    assert lost["other_pct"] == pytest.approx(25.0) and "foreign_pct" not in lost


def test_host_load_needs_two_samples_and_never_goes_negative():
    assert recorded([(0, HOST_TOTAL, 1.0), (0, HOST_BUSY, 1.0)]).host_load() == {}
    s = recorded([(0, CPU_SERVER, 0.0), (0, HOST_TOTAL, 0.0), (0, HOST_BUSY, 0.0), (0, HOST_STEAL, 0.0),
                  (1, CPU_SERVER, 1.0), (1, HOST_TOTAL, 2.0), (1, HOST_BUSY, 0.9), (1, HOST_STEAL, 0.0)])
    assert s.host_load()["other_pct"] == 0.0  # clock-tick rounding can make ours exceed busy


def test_rates_leave_host_counters_out():
    s = recorded([(0, CPU_SERVER, 0.0), (0, HOST_TOTAL, 0.0), (0, "Questions", 0.0),
                  (1, CPU_SERVER, 0.5), (1, HOST_TOTAL, 2.0), (1, "Questions", 100.0)])
    r = probes.rates(s.frame())
    assert list(r.columns) == ["Questions", "cpu_server_pct"] and r.iloc[0].tolist() == [100.0, 50.0]


def test_host_cpu_seconds_reads_proc_stat():
    now = counters.host_cpu_seconds()
    assert now[HOST_TOTAL] > now[HOST_BUSY] >= 0 and now[HOST_STEAL] >= 0


class Flushing:
    """A server whose flushing counters change for its first `busy` status reads."""
    def __init__(self, busy):
        self.reads, self.busy = 0, busy

    def query(self, sql):
        assert "SHOW GLOBAL STATUS" in sql
        self.reads += 1
        dirty = max(self.busy - self.reads, 0)
        return [("Innodb_buffer_pool_pages_dirty", str(dirty)),
                ("Innodb_buffer_pool_pages_flushed", str(1000 - dirty)),
                ("Innodb_checkpoint_age", str(dirty * 16384))]


def test_settle_waits_until_flushing_is_flat_for_the_quiet_time():
    s = Flushing(busy=6)
    waited, settled = probes.settle(s, timeout=30, quiet=0.1, every=0.01)
    assert settled and s.reads > 6 and waited >= 0.1  # the counters moved 5 times, then held
    assert probes.flushing_state(s) == (0.0, 1000.0, 0.0)


def test_settle_gives_up_at_its_timeout_and_says_so():
    s = Flushing(busy=10 ** 9)  # never flat
    waited, settled = probes.settle(s, timeout=0.2, quiet=0.1, every=0.01)
    assert not settled and waited >= 0.2


@pytest.mark.server
def test_settle_on_a_real_server_after_writes(server):
    server.query("CREATE DATABASE w")
    server.query("CREATE TABLE w.t (id INT PRIMARY KEY, pad CHAR(200)) ENGINE=InnoDB")
    server.query("INSERT INTO w.t SELECT seq, REPEAT('x', 200) FROM w.seq_1_to_100000")
    dirty, flushed, age = probes.flushing_state(server)
    assert dirty + flushed > 0 and age >= 0  # the writes show in the counters read
    waited, settled = probes.settle(server, timeout=120, quiet=1.0)
    assert settled and waited >= 1.0


def test_costs_per_transaction_are_each_counters_rate_over_the_steps():
    # server CPU 0.5 s over 2 s at 1,000 tx/s: 250 µs per transaction; redo read from
    # MySQL's LSN; a counter read once (involuntary switches) gives no cost
    s = recorded([(0, CPU_SERVER, 10.0), (0, "Innodb_redo_log_current_lsn", 0.0),
                  (0, probes.CS_SERVER_INVOL, 5.0),
                  (2, CPU_SERVER, 10.5), (2, "Innodb_redo_log_current_lsn", 600_000.0)])
    costs = s.per_transaction(1000.0)
    assert set(costs) == set(probes.COSTS)
    assert costs["cpu_server_us_per_txn"] == pytest.approx(250.0)
    assert costs["redo_bytes_per_txn"] == pytest.approx(300.0)
    assert costs["cs_server_involuntary_per_txn"] != costs["cs_server_involuntary_per_txn"]  # NaN
    assert all(v != v for v in s.per_transaction(0.0).values())  # no transaction: no cost


def test_thread_switches_keep_counting_when_threads_end_and_new_ones_start():
    """The kernel counts context switches per thread: the probe sums every thread's, and
    what an ended thread did before the reading stays counted."""
    import threading
    import time

    def sleeper():
        for _ in range(200):
            time.sleep(0.0005)  # each sleep: a voluntary switch

    def burst(n):
        ts = [threading.Thread(target=sleeper) for _ in range(n)]
        for t in ts:
            t.start()
        return ts

    probe = counters.ThreadCounts(os.getpid(), ("v", "i", "w"))
    start = probe()["v"]
    first = burst(4)
    time.sleep(0.05)
    mid = probe()["v"]  # the four threads, counted while they run
    for t in first:
        t.join()
    second = burst(4)  # new threads, the first four gone
    time.sleep(0.05)
    end = probe()["v"]
    for t in second:
        t.join()
    # each burst did ≈ 4 × 100 sleeps in 50 ms (each a voluntary switch); the first burst's
    # count stays in the total after its threads ended, the second's is added whole
    assert mid - start >= 40 and end - mid >= 40, (start, mid, end)
    assert counters.ThreadCounts(None, ("v", "i", "w"))() == {}


def test_run_delay_counts_the_time_a_thread_waited_for_a_cpu_and_pressure_the_hosts():
    """Three processes pinned to one CPU, each spinning until it has had a second of CPU:
    never sleeping, each waits whenever another runs, so however loaded the host, together
    they wait at least 1 + 2 s (the second and third in line) — and the host's CPU pressure
    ("some task waited") grows by at least the 2 s the last one finishes after the first."""
    import multiprocessing
    import time
    cpu, ready, leave = min(os.sched_getaffinity(0)), multiprocessing.Queue(), multiprocessing.Event()
    busy = [multiprocessing.Process(target=_spin_on, args=(cpu, 1.0, ready, leave)) for _ in range(3)]
    pressure = counters.cpu_pressure()
    for b in busy:
        b.start()
    probes = [counters.ThreadCounts(b.pid, ("v", "i", "w")) for b in busy]
    before, t0 = [pr()["w"] for pr in probes], time.monotonic()
    for _ in busy:
        ready.get(timeout=60)
    waited = (sum(pr()["w"] for pr in probes) - sum(before)) / 1e9
    wall = time.monotonic() - t0
    leave.set()
    for b in busy:
        b.join()
    assert waited > 2.5 and wall > 2.5, (waited, wall)  # ≥ 3 s less what they waited before the first reading
    if pressure:  # a kernel without PSI keeps none
        assert (counters.cpu_pressure()["host_cpu_pressure_us"] - pressure["host_cpu_pressure_us"]) / 1e6 > 1.5


def _spin_on(cpu, seconds, ready, leave):
    import time
    os.sched_setaffinity(0, {cpu})
    end = time.process_time() + seconds  # one second of CPU each: three seconds of wall on one CPU
    while time.process_time() < end:
        pass
    ready.put(os.getpid())
    leave.wait(60)
