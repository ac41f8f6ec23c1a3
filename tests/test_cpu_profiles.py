"""On-CPU profiles: perf's samples folded into stacks, flame graphs drawn from them, what moved
between two arms, the parameter checks, and the thread-pool smoke run profiled end to end."""
from __future__ import annotations

import re
import subprocess
import sys
import time

import pandas as pd
import pytest

from dbstudies.analysis import cpu_profiles
from dbstudies.core.errors import ParamError
from dbstudies.kit import thread_handling as th
from dbstudies.kit.study import load
from dbstudies.kit.studykit import arms_of
from dbstudies.measure import checks, experiment, ownership, schedule
from dbstudies.measure.loop import Loop
from dbstudies.observe import flamegraph, profiler
from dbstudies.store import results
from dbstudies.store.results import Run
from dbstudies.store.tables import CPU_PROFILES

# `perf script -F comm,ip,sym,dso` as perf 6.1 prints it (offsets and a frame without symbol)
SCRIPT = """mariadbd
\t    55d0c1a2 row_search_mvcc+0x2f1 (/usr/sbin/mariadbd)
\t    55d0c0f0 handler::ha_index_read_map+0x40 (/usr/sbin/mariadbd)
\t    55d0b000 dispatch_command (/usr/sbin/mariadbd)

mariadbd
\t    55d0c1a2 row_search_mvcc+0x11 (/usr/sbin/mariadbd)
\t    55d0c0f0 handler::ha_index_read_map+0x40 (/usr/sbin/mariadbd)
\t    55d0b000 dispatch_command (/usr/sbin/mariadbd)

ib_pg_flush_co
\t    7f0011 [unknown] (/usr/lib/x86_64-linux-gnu/libc.so.6)

mariadbd
\t    ffffffff81000000 [unknown] ([unknown])
"""


def test_perf_samples_fold_into_stacks_outermost_first_with_their_thread():
    st = profiler.fold(SCRIPT)
    assert st == {"mariadbd;dispatch_command;handler::ha_index_read_map;row_search_mvcc": 2,
                  "ib_pg_flush_co;[libc.so.6]": 1, "mariadbd;[unknown]": 1}


def test_folded_stacks_survive_a_round_trip_most_sampled_first(tmp_path):
    st = profiler.fold(SCRIPT)
    profiler.write_folded(st, tmp_path / "a.folded")
    lines = (tmp_path / "a.folded").read_text().splitlines()
    assert lines[0].endswith(" 2") and profiler.read_folded(tmp_path / "a.folded") == st


def test_a_flame_graph_draws_each_box_as_wide_as_its_samples():
    st = {"t;main;a": 30, "t;main;b": 10, "t;other": 60}
    svg = flamegraph.svg(st, "title", width=1020)  # 1000 px inside the padding
    boxes = {re.search(r"<title>([^:]+):", g)[1]: float(re.search(r'width="([\d.]+)"', g)[1])
             for g in svg.split("<g>")[1:]}
    assert boxes == pytest.approx({"t": 1000, "main": 400, "a": 300, "b": 100, "other": 600})
    assert "t: 100 samples (100.00 %)" in svg and "title — 100 samples" in svg
    # a difference graph: a grown share in red, a shrunk one in blue, unchanged white
    diff = flamegraph.svg(st, "d", delta={"a": 5.0, "other": -5.0, "t": 0.0})
    fills = dict(re.findall(r"<title>(\w+):[^<]*</title><rect[^>]*fill=\"([^\"]+)\"", diff))
    assert fills["a"] == "rgb(235,65,65)" and fills["other"] == "rgb(65,65,235)"
    assert fills["t"] == "rgb(235,235,235)" and "+5.00 points against the other arm" in diff


def test_shares_count_a_recursive_function_once_per_sample():
    df = flamegraph.shares({"t;f;f;g": 3, "t;f": 1}).set_index("function")
    assert df.loc["f", "total"] == 4 and df.loc["f", "self"] == 1 and df.loc["g", "self_pct"] == 75


def test_a_machine_without_perf_or_a_refusing_kernel_is_a_parameter_error(monkeypatch):
    monkeypatch.setattr(profiler.shutil, "which", lambda name: None)
    assert "`perf` is not installed" in profiler.problems()[0]
    monkeypatch.undo()
    monkeypatch.setattr(profiler.proc, "run", lambda *a, **k: profiler.proc.Result(
        list(a[0]), 255, "", "Error: No permission to enable cpu-clock event."))
    (problem,) = profiler.problems()
    assert "perf_event_paranoid" in problem and "No permission" in problem
    with pytest.raises(ParamError) as e:
        checks.resolve(load("thread_pool"), "smoke", cpu_profile=True)
    assert "cpu_profile: the kernel refused" in str(e.value)


def test_named_cells_must_be_cells_of_the_run():
    with pytest.raises(ParamError) as e:
        checks.resolve(load("thread_pool"), "smoke", cpu_profile_cells=["oltp_point_select@3", "nope@1"])
    text = str(e.value)
    assert "'oltp_point_select@3' is not a cell of this run" in text and "'nope@1'" in text
    assert "cpu_profile is false" in text
    p = checks.resolve(load("thread_pool"), "smoke", cpu_profile=True,
                           cpu_profile_cells=["oltp_point_select@4"])
    assert cpu_profiles.cells(None, [], p) == [{"workload": "oltp_point_select", "threads": 4}]


def test_a_recorder_samples_a_busy_process_and_keeps_only_the_folded_stacks(tmp_path):
    busy = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\n"
                             "while time.time() - t < 20: sum(i * i for i in range(1000))"])
    try:
        rec = profiler.Recorder(busy.pid, tmp_path / "p" / "step-1.folded")
        rec.start(time.monotonic(), 0)  # returns once perf records
        time.sleep(1.0)  # the length of the 'step'
        rec.stop()
        # armed but never started: perf ran with its events off, so no sample (a step's
        # profile holds the step, not perf's set-up before it)
        idle = profiler.Recorder(busy.pid, tmp_path / "p" / "step-2.folded")
        idle.arm()
        time.sleep(0.5)
        idle.stop()
        # a failed step: perf stopped, nothing folded, nothing left behind
        gone = profiler.Recorder(busy.pid, tmp_path / "p" / "step-3.folded")
        gone.arm()
        perf = gone._p
        gone.close()
    finally:
        busy.kill()
        busy.wait()
    stacks = profiler.read_folded(rec.out)
    assert rec.samples == sum(stacks.values()) > 50  # ≈ 499 a second of one busy thread
    assert all(s.startswith("python") for s in stacks) and not rec.data.exists()
    assert idle.samples == 0 and profiler.read_folded(idle.out) == {}
    assert perf.poll() is not None and not gone.out.exists() and not gone.data.exists()
    assert not list((tmp_path / "p").glob("*.perf.data"))


@pytest.mark.notebook
@pytest.mark.server
def test_the_thread_pool_smoke_run_profiles_its_judged_cells_on_every_arm(smoke_run):
    proc, run_dir = smoke_run("thread_pool")  # conftest: -p cpu_profile true
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = Run.open(run_dir)
    plan = pd.DataFrame(run.metadata["cpu_profile_plan"])
    cells = plan[["workload", "threads"]].drop_duplicates()
    rounds = profiler.PROFILE_ROUNDS["smoke"]  # each a pair of every chosen cell: both arms back to back
    assert 1 <= len(cells) <= cpu_profiles.MAX_CELLS and (plan.groupby(["workload", "threads"]).size() == 2 * rounds).all()
    assert (plan.groupby("pair")["arm"].nunique() == 2).all() and plan["repeat"].nunique() == rounds
    steps = run.table("steps")
    shot = steps[steps["phase"] == "profile"]
    assert sorted(shot["step"]) == sorted(plan["step"])
    assert not set(shot["step"]) & set(results.measured(run)["step"])  # kept out of the verdicts
    rows = run.table(CPU_PROFILES)
    assert set(rows["step"]) == set(plan["step"]) and (rows["samples"] > 50).all()
    for f in rows["file"]:
        assert any("dispatch_command" in s for s in profiler.read_folded(run.path / f))  # symbols of mariadbd
    html = (run.path / "report.html").read_text()
    assert "Where the server spent its CPU" in html and len(re.findall(r"class=[\"']dbs-flame", html)) >= 3
    assert "pool-of-threads against one-thread-per-connection" in html and "change µs/txn" in html
    assert len(list((run.path / "profiles").glob("flame-*.svg"))) == 2 * len(cells)


@pytest.mark.server
def test_named_cells_are_profiled_with_the_waits_of_an_arm_that_turned_performance_schema_on(tmp_path):
    tp = load("thread_pool")
    p = checks.resolve(tp, "smoke", threads=[4], repeats=1, duration=1, warmup=0, design="blocks",
                           cpu_profile=True, cpu_profile_cells=["oltp_point_select@4"],
                           settings={"performance_schema": "ON"})
    run = ownership.open_run(tp, p, root=tmp_path)
    experiment.measure(tp, p, run, progress=False)
    (view,) = cpu_profiles.views(run, arms_of(tp, p))
    assert [a["arm"] for a in view["arms"]] == list(th.SCHEDULERS) and view["title"] == "oltp_point_select, 4 threads"
    waits = view["waits"].set_index("event")
    # every point select reads its row through the handler: one table I/O wait per transaction
    per_k = waits.loc["wait/io/table/sql/handler", [f"{a}: waits per 1,000 txn" for a in th.SCHEDULERS]]
    assert per_k.between(900, 1100).all(), per_k
    assert not waits.index.str.startswith(cpu_profiles.NOT_WAITS).any()
    assert (run.table("waits")["event"] == "idle").any()  # stored whole, left out of the table
    (diff,) = view["differences"]
    assert diff["candidate"] == th.POOL and len(diff["table"]) == cpu_profiles.TOP


def test_profiled_cells_are_shown_largest_throughput_difference_first():
    rel = pd.DataFrame({"workload": ["w"] * 4, "threads": [1, 8, 64, 64],
                        "delta_pct": [-5.0, 30.0, -40.0, 10.0]})  # 64: two candidates
    size = cpu_profiles.sizes(pd.concat([rel, pd.DataFrame({"workload": ["w"], "threads": [256], "delta_pct": [None]})]))
    assert size == {("w", 1): 5.0, ("w", 8): 30.0, ("w", 64): 40.0}  # 256: not compared
    assert sorted([1, 8, 64, 256], key=lambda t: -size.get(("w", t), 0.0)) == [64, 8, 1, 256]


def test_the_budget_keeps_the_profiled_rounds_time_from_their_estimate_then_from_timed_pairs():
    tp = load("thread_pool")
    p = checks.resolve(tp, "quick", cpu_profile=True)  # 20 min, 8 cells, 8 profiled rounds of ≤ 4 cells
    loop = Loop(tp, p, run=None)
    assert loop.reserve() == pytest.approx(schedule.profile_seconds(tp, p)) and loop.deadline < loop.end
    loop.pair_seconds = {("a",): [12.0, 14.0]}  # a pair of two arms took 13 s on average
    loop.restart_seconds = [10.0]
    assert loop.reserve() == pytest.approx(8 * (10.0 + 4 * (13.0 + 2 * schedule.FOLD_SECONDS)))
    loop.profiling = True
    assert loop.deadline == loop.end  # the profiled rounds have the whole budget
    assert Loop(tp, checks.resolve(tp, "quick"), run=None).reserve() == 0.0

