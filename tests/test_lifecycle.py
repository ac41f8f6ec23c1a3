"""Run lifecycle from the command line: `runs` (abandoned runs detected and marked),
`clean` (leftovers of runs that did not end cleanly, never a complete run's data) and
`export` (tidy tables for other tools). No server needed: the runs are made by hand."""
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dbstudies.kit import thread_handling as th
from dbstudies.kit.study import load
from dbstudies.measure import checks, ownership
from dbstudies.store import exports, results
from dbstudies.store.results import Run
from dbstudies.store.tables import INTERVALS

CLI = [sys.executable, "-m", "dbstudies"]
tp = load("thread_pool")


def cli(*argv):
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=60)


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def make_run(root, status="running", owner_pid=None, **overrides):
    run = ownership.create_run("thread_pool", checks.resolve(tp, "smoke", **overrides), root, "cli")
    if owner_pid is not None:
        run.update(owner={**run.metadata["owner"], "pid": owner_pid})
    if status != "running":
        run.finish(status)
    return run


def leave_behind(run, tmp_path):
    """What a SIGKILLed run leaves: a datadir in the run and a socket directory."""
    datadir = run.path / "server" / "mariadb-10.11" / "datadir"
    datadir.mkdir(parents=True)
    (datadir / "ibdata1").write_bytes(b"\0" * 2**20)
    sockdir = tmp_path / f"dbs-{run.path.name[-6:]}"
    sockdir.mkdir()
    run.update(servers=[{"label": "prepare", "socket": str(sockdir / "server.sock")}])
    return datadir, sockdir


def test_runs_lists_and_marks_abandoned_runs(tmp_path):
    gone = make_run(tmp_path, owner_pid=dead_pid(), duration=3)
    alive = make_run(tmp_path, owner_pid=os.getpid())
    done = make_run(tmp_path, "complete")
    p = cli("runs", "--runs-dir", str(tmp_path))
    assert p.returncode == 0, p.stderr
    lines = {ln.split()[0]: ln for ln in p.stdout.splitlines()[1:]}
    assert lines.keys() == {gone.path.name, alive.path.name, done.path.name}
    assert " abandoned " in lines[gone.path.name] and "smoke: duration=3" in lines[gone.path.name]
    assert " running " in lines[alive.path.name] and "smoke: none" in lines[alive.path.name]
    assert " complete " in lines[done.path.name]
    assert gone.status == "abandoned" and "is gone" in gone.metadata["error"]
    assert alive.status == "running" and done.status == "complete"
    again = cli("runs", "thread_pool", "--runs-dir", str(tmp_path)).stdout.splitlines()
    assert [ln.split()[:3] for ln in again] == [ln.split()[:3] for ln in p.stdout.splitlines()]
    bad = cli("runs", "tpcc_42", "--runs-dir", str(tmp_path))
    assert bad.returncode == 2 and "unknown study 'tpcc_42'" in bad.stderr


def test_clean_removes_leftovers_of_abandoned_and_failed_runs_only(tmp_path):
    gone = make_run(tmp_path / "runs", owner_pid=dead_pid())
    failed = make_run(tmp_path / "runs", "failed")
    alive = make_run(tmp_path / "runs", owner_pid=os.getpid())
    done = make_run(tmp_path / "runs", "complete")
    kept = [leave_behind(r, tmp_path) for r in (alive, done)]
    removed = [leave_behind(r, tmp_path) for r in (gone, failed)]
    p = cli("clean", "--runs-dir", str(tmp_path / "runs"))
    assert p.returncode == 0, p.stderr
    for datadir, sockdir in removed:
        assert not datadir.exists() and not sockdir.exists()
        assert f"removed {datadir} (1.0 MiB)" in p.stdout
    for datadir, sockdir in kept:
        assert datadir.exists() and sockdir.exists()
    assert "freed 2.0 MiB" in p.stdout and gone.status == "abandoned"
    assert (gone.path / "metadata.json").exists()  # what was measured stays
    assert "freed 0.0 MiB" in cli("clean", "--runs-dir", str(tmp_path / "runs")).stdout


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_writes_every_table(tmp_path, fmt):
    run = make_run(tmp_path / "runs", "complete")
    frame = pd.DataFrame({"step": [1, 1], "second": [1, 2], "threads_running": [4, 4],
                          "tps": [10.0, 11.0], "qps": [100.0, 110.0], "reads_per_s": [1.0, 2.0],
                          "writes_per_s": [0.0, 0.0], "errors_per_s": [0.0, 0.0],
                          "reconnects_per_s": [0.0, 0.0], "latency_p_ms": [0.5, 0.6]})
    run.append(INTERVALS, frame)
    run.append(INTERVALS, frame.assign(step=2))
    p = cli("export", str(run.path), "--format", fmt, "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    f = tmp_path / "out" / f"intervals.{fmt}"
    assert p.stdout.split() == [str(f)]
    back = pd.read_csv(f) if fmt == "csv" else pd.read_parquet(f)
    pd.testing.assert_frame_equal(back, run.table(INTERVALS), check_dtype=False)
    assert len(back) == 4


def test_export_of_a_run_without_tables_or_a_missing_run_is_an_error(tmp_path):
    run = make_run(tmp_path / "runs", "failed")
    p = cli("export", str(run.path), "--out", str(tmp_path / "out"))
    assert p.returncode == 2 and "has no tables to export" in p.stderr and "Traceback" not in p.stderr
    p = cli("export", str(tmp_path / "missing"))
    assert p.returncode == 2 and "neither a run directory" in p.stderr
    assert not (tmp_path / "out").exists()


def test_list_runs_of_every_study(tmp_path):
    a = make_run(tmp_path)
    b = Run.create("other_study", {}, root=tmp_path)
    # run ids sort by time to the second; two runs of one second sort by their random suffix
    assert sorted(r.path for r in results.list_runs(None, tmp_path)) == sorted([a.path, b.path])
    assert [r.path for r in results.list_runs("other_study", tmp_path)] == [b.path]


@pytest.mark.notebook  # `dbstudies report` (refused here before any kernel starts)
def test_report_of_a_running_run_is_refused_until_it_ends(tmp_path):
    run = make_run(tmp_path / "runs")  # owned by this (live) process
    p = cli("report", str(run.path))
    assert p.returncode == 2 and "is still running (pid" in p.stderr and "Traceback" not in p.stderr
    assert run.status == "running" and not (run.path / "notebook.ipynb").exists()


def run_with_steps(root, gain, seed):
    """A complete run whose steps have QPS 10,000 × gain (3 % noise), 6 repeats per arm."""
    from dbstudies.store.tables import STEPS
    run = make_run(root, "complete")
    rng = np.random.default_rng(seed)
    rows = [{**{c: 0 for c in STEPS.columns}, "step": i + 1, "phase": "measure", "repeat": r,
             "arm": arm, "workload": "oltp_point_select", "threads": t,
             "qps": 10_000 * gain * np.exp(rng.normal(0, 0.03)), "latency_p99_ms": 1.0}
            for i, (r, arm, t) in enumerate((r, a, t) for r in range(1, 7) for a in th.SCHEDULERS
                                            for t in (1, 4))]
    run.append(STEPS, pd.DataFrame(rows))
    return run


def test_compare_two_runs_finds_the_drift_and_says_it_is_not_interleaved(tmp_path):
    a = run_with_steps(tmp_path / "runs", 1.0, seed=1)
    b = run_with_steps(tmp_path / "runs", 1.25, seed=2)
    for r in (a, b):  # one host at one speed, as recorded (a live probe reads this machine's load too)
        r.update(host={**r.metadata["host"], "loop_ms": 40.0, "loop_ms_end": 41.0})
    p = cli("compare", str(a.path), str(b.path), "--csv", str(tmp_path / "cmp.csv"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"qps: run {b.path.name} vs run {a.path.name} (baseline)")
    assert "not interleaved" in p.stdout and "Minimum detectable effect" in p.stdout
    table = pd.read_csv(tmp_path / "cmp.csv")
    assert len(table) == 4 and (table["verdict"] == "better").all()  # 2 arms × 2 thread counts
    assert table["delta_pct"].between(15, 35).all()
    assert table["same_host"].all() and "different hosts" not in p.stdout
    same = cli("compare", str(a.path), str(a.path))
    assert same.returncode == 0 and "better" not in same.stdout and "worse" not in same.stdout
    # a run measured elsewhere (a sweep's worker: another machine's identity) is said to be
    # so, in the table too; a host that ran the fixed CPU loop 2× slower is said first
    assert a.metadata["host"]["machine_id"] == b.metadata["host"]["machine_id"]
    b.update(host={**b.metadata["host"], "hostname": "bench-7", "machine_id": "0123456789ab",
                   "loop_ms": 80.0, "loop_ms_end": 82.0})
    p = cli("compare", str(a.path), str(b.path), "--csv", str(tmp_path / "cmp2.csv"))
    assert "measured on different hosts" in p.stdout and "B: bench-7" in p.stdout
    assert not pd.read_csv(tmp_path / "cmp2.csv")["same_host"].any()
    assert p.stdout.startswith("The hosts ran at different speeds: a fixed CPU loop took ") and "(× 2.0)" in p.stdout


def test_compare_refuses_runs_of_different_studies_or_without_steps(tmp_path):
    a = run_with_steps(tmp_path / "runs", 1.0, seed=1)
    other = ownership.create_run("versions", checks.resolve(load("versions"), "smoke"), tmp_path / "runs", "cli")
    p = cli("compare", str(a.path), str(other.path))
    assert p.returncode == 2 and "runs of different studies cannot be compared" in p.stderr
    empty = make_run(tmp_path / "runs", "failed")
    p = cli("compare", str(a.path), str(empty.path))
    assert p.returncode == 2 and f"run {empty.path.name} holds no measured steps" in p.stderr
    assert "Traceback" not in p.stderr


def test_a_stuck_dbstudies_process_prints_where_it_is_on_sigusr1_and_goes_on(tmp_path):
    """What `dbstudies` sets for the kernels it starts (DBSTUDIES_STACKS_ON_USR1): `kill -USR1`
    prints every thread's stack and the process goes on (SIGUSR1's default would end it)."""
    import signal

    from processes import wait_for
    err = tmp_path / "stderr.txt"
    with open(err, "w") as e:
        p = subprocess.Popen([sys.executable, "-c", "import dbstudies, time\nprint('ready', flush=True)\ntime.sleep(60)"],
                             stdout=subprocess.PIPE, stderr=e, text=True,
                             env={**os.environ, "DBSTUDIES_STACKS_ON_USR1": "1"})
    try:
        assert p.stdout.readline().strip() == "ready"
        os.kill(p.pid, signal.SIGUSR1)
        wait_for(lambda: "most recent call first" in err.read_text(), 10, "the stacks")
        # the main thread's own frame (the signal may come before or after its sleep begins:
        # line 2 or 3 of the script, so the line is not asserted — it failed that way once)
        assert 'File "<string>", line ' in err.read_text()
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()


def test_a_run_records_its_hosts_identity_and_speed_and_compare_names_a_slower_host_at_its_work(tmp_path):
    """The fixed CPU loop at the run's start and end, the machine's identity, the kernel in the
    set-up line; two runs whose one-client µs per transaction differ 2× are said to first."""
    from dbstudies.analysis import runs
    from dbstudies.report.described import setup_line
    from dbstudies.store.tables import STEPS
    made = []
    for gain in (1.0, 0.5):  # the second host: half the transactions per second at one client
        run = make_run(tmp_path / "runs", "complete")
        run.update(arms=[{"label": a} for a in th.SCHEDULERS])
        run.append(STEPS, pd.DataFrame([{**{c: 0 for c in STEPS.columns}, "step": i + 1, "phase": "measure",
                                        "repeat": 1, "arm": arm, "workload": "oltp_point_select", "threads": 1,
                                        "tps": 2_000 * gain, "qps": 2_000 * gain}
                                       for i, arm in enumerate(th.SCHEDULERS)]))
        made.append(run)
    a, b = made
    host = a.metadata["host"]
    assert 0 < host["loop_ms"] < 10_000 and 0 < host["loop_ms_end"] < 10_000 and len(host["machine_id"]) == 12
    assert f"kernel {host['kernel']}, a fixed CPU loop in {host['loop_ms']:g} ms at the start" in setup_line(a.metadata)
    assert runs.one_client_us(a) == {"oltp_point_select": 500.0} and runs.host_relation(a, b) == "on the same host"
    lines = runs.speed_lines([a, b])
    assert lines[0].startswith("One client thread took 500 µs a transaction in run ") and "(× 2.0)" in lines[0]
    for r in made:  # runs recorded before the identity: alike by their facts, and said so
        r.update(host={k: v for k, v in r.metadata["host"].items() if k != "machine_id"})
    assert runs.host_relation(a, b).startswith("on hosts alike in name, CPU model and kernel")


def test_runs_suggests_a_report_command_for_a_variant_that_names_the_run_by_its_path(tmp_path):
    """A notebook's re-analysis writes no report: `runs` says the command that writes one — the
    run named by its path (a bare run id exits 2: no such run directory)."""
    from dbstudies.commands import runs as run_commands
    run = make_run(tmp_path / "runs", "complete")
    line = run_commands.variant_line(run, "draw_threshold-0.3", {"draw_threshold": {"variant": 0.3, "run": 0.05}})
    assert line.endswith(f"dbstudies report {run.path} -p draw_threshold 0.3` writes one)"), line


def test_a_smoke_run_never_replaces_a_larger_runs_exported_figures(tmp_path):
    """figures/<study>/ keeps the latest complete run's figures, but seconds of machinery
    (a smoke run, e.g. one started in JupyterLab) do not replace a quick run's."""
    figures = tmp_path / "figures"
    made = {}
    for profile in ("quick", "smoke", "quick"):
        run = make_run(tmp_path / "runs", "complete")
        run.update(parameters={**run.metadata["parameters"], "profile": profile})
        run.figures.mkdir(parents=True, exist_ok=True)
        (run.figures / "qps_vs_threads.png").write_bytes(profile.encode())
        made.setdefault(profile, []).append((run, exports.export_figures(run, figures)))
    (quick, first), (quick2, again) = made["quick"]
    (smoke, kept) = made["smoke"][0]
    assert first == again == figures / "thread_pool" and kept is None
    assert json.loads((figures / "thread_pool" / exports.EXPORTED).read_text()) == {"run": quick2.path.name,
                                                                                     "profile": "quick"}

