"""The sampler's arithmetic on recorded samples: CPU of server and client, host load."""
import pytest

from dbstudies import probes
from dbstudies.probes import CPU_CLIENT, CPU_SERVER, HOST_BUSY, HOST_STEAL, HOST_TOTAL, Sampler


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
    now = probes.host_cpu_seconds()
    assert now[HOST_TOTAL] > now[HOST_BUSY] >= 0 and now[HOST_STEAL] >= 0
