"""Parameter validation and the run plan (no server needed)."""
import pytest

from dbstudies.params import ParamError, parse_value
from dbstudies.studies import thread_pool as tp


def problems(**overrides):
    with pytest.raises(ParamError) as e:
        tp.resolve("smoke", **overrides)
    return e.value.problems


def test_profiles_resolve_and_differ():
    smoke, quick, full = (tp.resolve(p) for p in ("smoke", "quick", "full"))
    assert smoke.duration < quick.duration <= full.duration
    assert max(full.threads) == 4096 and smoke.profile == "smoke"


def test_cli_strings_are_coerced():
    p = tp.resolve("smoke", threads="[1,8,64]", duration="5", workloads="oltp_read_only,oltp_read_write",
                   settings='{"innodb_buffer_pool_size": "1G"}', draw_threshold="0.1")
    assert p.threads == [1, 8, 64] and p.duration == 5
    assert p.workloads == ["oltp_read_only", "oltp_read_write"]
    assert p.settings == {"innodb_buffer_pool_size": "1G"} and p.draw_threshold == 0.1
    assert tp.resolve("smoke", threads=16).threads == [16]
    assert parse_value("[1, 8]") == [1, 8] and parse_value("abc") == "abc"


@pytest.mark.parametrize("overrides, fragment", [
    ({"thread": [1]}, "thread: unknown parameter"),
    ({"workloads": ["tpcc"]}, "workloads: need distinct values"),
    ({"threads": [0, 8]}, "threads: each must be between 1 and 4096"),
    ({"threads": [8, 8]}, "threads: need distinct thread counts"),
    ({"threads": [5000]}, "between 1 and 4096"),
    ({"duration": "five"}, "duration: expected a whole number"),
    ({"duration": 0}, "duration: must be ≥ 1"),
    ({"repeats": 0}, "repeats: must be ≥ 1"),
    ({"schedulers": ["pool-of-threads", "fibers"]}, "schedulers: need distinct values"),
    ({"flavour": "mysql-3.23"}, "flavour: unknown server flavour"),
    ({"server_cpus": "0-999"}, "server_cpus: CPUs"),
    ({"client_cpus": "x"}, "client_cpus: bad CPU list"),
    ({"settings": {"datadir": "/var/lib/mysql"}}, "settings: ['datadir'] are set by the driver"),
    ({"settings": "not a mapping"}, "settings: expected a mapping"),
    ({"draw_threshold": 2}, "draw_threshold: must be in [0, 1)"),
])
def test_bad_parameters_are_rejected(overrides, fragment):
    assert any(fragment in p for p in problems(**overrides)), problems(**overrides)


def test_all_problems_are_reported_at_once():
    found = problems(repeats=0, duration=0, threads=[0])
    assert len(found) == 3


def test_unknown_profile():
    with pytest.raises(ParamError, match="unknown profile 'huge'"):
        tp.resolve("huge")


def test_plan_interleaves_repeats_and_is_seeded():
    p = tp.resolve("quick", repeats=6, seed=3)
    plan = tp.plan(p)
    cells = len(p.workloads) * len(p.threads)
    assert len(plan) == 6 * 2 * cells and plan["step"].tolist() == list(range(1, len(plan) + 1))
    # every (repeat, scheduler) block is contiguous and holds each cell exactly once
    blocks = plan.groupby(["repeat", "scheduler"], sort=False)
    assert blocks.ngroups == 12
    for _, b in blocks:
        assert b["step"].diff().dropna().eq(1).all()
        assert len(b[["workload", "threads"]].drop_duplicates()) == cells
    # the scheduler that goes first changes across repeats (not all A then all B)
    firsts = plan.groupby("repeat")["scheduler"].first()
    assert firsts.nunique() == 2
    assert plan.equals(tp.plan(p))
    assert not plan.equals(tp.plan(tp.resolve("quick", repeats=6, seed=4)))


def test_pool_settings_follow_server_cpus():
    assert tp.scheduler_settings(tp.POOL, 6) == {"thread_handling": "pool-of-threads",
                                                "thread_pool_size": 6}
    assert tp.scheduler_settings(tp.PER_CONNECTION, 6) == {"thread_handling": "one-thread-per-connection"}
