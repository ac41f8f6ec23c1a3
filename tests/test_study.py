"""The thread-pool study end to end against real servers: failures, Ctrl-C, the CLI."""
import os
import re
import shlex
import signal
import subprocess
import sys
import threading

import pytest
from conftest import REPO, SMOKE_RUNS
from processes import processes_mentioning, wait_for

from dbstudies import servers
from dbstudies.core import errors
from dbstudies.kit import thread_handling as th
from dbstudies.kit.study import load
from dbstudies.measure import checks, experiment, ownership
from dbstudies.observe import pauses, probes
from dbstudies.store import results
from dbstudies.store.results import Run
from dbstudies.store.tables import INTERVALS, STATUS

tp = load("thread_pool")

pytestmark = pytest.mark.server
CLI = [sys.executable, "-m", "dbstudies"]


def steps_on_disk(run):
    """Measured steps flushed so far (not warm-ups, not attempts discarded as busy)."""
    return len(results.measured(run)) if (run.path / "tables" / "steps").exists() else 0


def streamed(run, seconds):
    """The stream file of the step being measured once it holds `seconds` intervals (a
    stream compacted away between the listing and the read is not it)."""
    for path in (run.path / "tables" / "intervals").glob("stream-*.jsonl"):
        try:
            if len(path.read_text().splitlines()) >= seconds:
                return path
        except FileNotFoundError:
            continue
    return None


@pytest.mark.notebook
def test_killing_mariadbd_mid_run_fails_cleanly_and_keeps_finished_steps(tmp_path):
    """…and the seconds the killed step had streamed (its intervals and status samples).
    Paired design: two servers up; the one measuring is killed mid-step."""
    p = checks.resolve(tp, "smoke", duration=6, repeats=3, warmup=0)
    run = ownership.open_run(tp, p, root=tmp_path)
    marker = str(run.path / "server")
    killed = {}

    def killer():
        try:  # every wait is on a state the run writes atomically (progress.json, streams)
            wait_for(lambda: (run.progress() or {}).get("done", 0) >= 2, 120, "two finished steps")
            stream = wait_for(lambda: streamed(run, 2), 60, "2 s streamed by a step")
            step = int(stream.stem.split("-", 1)[1])
            arm = next(r["arm"] for r in run.metadata["plan"] if r["step"] == step)
            (pid,) = processes_mentioning(f"{marker}/{results.slug(arm)}/")
            killed.update(stream=stream, step=step, pid=pid)
            os.kill(pid, signal.SIGKILL)
        except BaseException as e:  # noqa: BLE001 - said by the test, not lost in a thread
            killed["error"] = e

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    try:
        experiment.measure(tp, p, run, progress=False)
        error = None
    except servers.ServerDied as e:
        error = e
    t.join(5)
    assert "error" not in killed, f"the killer thread failed: {killed.get('error')!r}"
    assert error is not None and "died during sysbench run" in str(error), error
    assert "exit code -9" in str(error)
    t.join(5)
    assert killed["pid"]
    meta = run.metadata
    assert meta["status"] == "failed" and "ServerDied" in meta["error"]
    kept = results.measured(run)
    assert len(kept) >= 2 and kept["step"].tolist() == list(range(1, len(kept) + 1))
    assert (kept.groupby("pair").size() == 2).all()  # whole pairs only
    assert (kept["qps"] > 0).all()
    died = killed["step"]
    assert died not in set(kept["step"])
    pair = next(r["pair"] for r in meta["plan"] if r["step"] == died)
    held = {r["step"] for r in meta["plan"] if r["pair"] == pair}  # its pair: not stored whole
    intervals, status = run.table(INTERVALS), run.table(STATUS)  # with the streamed rows
    seen = set(intervals[intervals["step"] > 0]["step"])
    assert set(kept["step"]) | {died} <= seen <= set(kept["step"]) | held
    last = intervals[intervals["step"] == died]
    assert len(last) >= 2 and last["second"].tolist() == list(range(1, len(last) + 1))
    assert (last["tps"] > 0).all() and len(status[status["step"] == died]) > 0
    assert processes_mentioning(marker) == []
    for s in meta["servers"]:
        assert processes_mentioning(s["socket"]) == []  # no sysbench left either
    for arm in th.SCHEDULERS:
        assert not (run.path / "server" / results.slug(arm) / "datadir").exists()
        assert "mariadb-10.11.err" in os.listdir(run.path / "server" / results.slug(arm))
    # measured like from JupyterLab: no executed notebook in the run; `report` makes one
    # by executing the notebook on the run (it measures nothing), then renders the report
    assert not (run.path / "notebook.ipynb").exists()
    p = subprocess.run([*CLI, "report", str(run.path)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip() == str(run.path / "report.html")
    assert len(results.measured(run)) == len(kept) and run.status == "failed"  # nothing measured
    check_partial_report(run, "failed", "ServerDied")


def check_partial_report(run, status, error):
    """The report of a run that did not complete: banner, then the analysis of its steps."""
    html = (run.path / "report.html").read_text()
    assert f"<b>Run {status}</b>: {error}" in html
    n = len(results.measured(run))
    assert f"ended {status}; nothing is measured again: the sections below analyse the " \
           f"{n} measured step{'s' if n != 1 else ''} it holds" in html
    assert html.count("<img") >= 3 and "Summary per configuration" in html
    assert "the highest median QPS of the thread counts measured" in html  # the conclusion of what finished
    assert "Traceback" not in html and str(run.path) not in html and "/tmp/" not in html


def test_a_step_on_a_busy_host_is_measured_again_and_the_attempts_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(probes, "busy", lambda host: True)  # every step sees a busy host
    # a smoke run measures nothing again (`busy_retries` 0 in every smoke profile): two here
    p = checks.resolve(tp, "smoke", threads=[1], duration=1, warmup=0, repeats=1, busy_retries=2)
    run = ownership.open_run(tp, p, root=tmp_path)
    experiment.measure(tp, p, run, progress=False)
    raw = run.table("steps")
    assert sorted(raw["phase"]) == ["busy"] * 4 + ["measure"] * 2  # 2 steps × 2 retries
    assert (raw[raw.phase == "busy"]["step"] < 0).all()
    assert set(raw[raw.phase == "busy"]["arm"]) == set(th.SCHEDULERS)
    steps = results.measured(run)
    assert steps["step"].tolist() == [1, 2] and (steps["remeasured"] == 2).all()
    assert steps["host_busy"].all()  # still busy after the last retry: flagged, not dropped
    assert set(run.table("histograms")["step"]) == set(raw["step"])  # each attempt kept whole
    assert tp.summary(steps)["remeasured"].sum() == 4


def test_flavours_not_provisioned_are_provisioned_first_and_the_progress_says_so(tmp_path, monkeypatch):
    built, seen = [], []
    run = Run.create("versions", {}, root=tmp_path)

    def provision(self, say=print):
        seen.append(run.progress())
        built.append(self.name)
    monkeypatch.setattr(servers.Flavour, "provisioned", property(lambda self: self.name != "mysql-9.7"))
    monkeypatch.setattr(servers.Flavour, "provision", provision)
    experiment.provision(["mariadb-10.11", "mysql-9.7"], run, total=12)
    assert built == ["mysql-9.7"]
    assert seen == [{"done": 0, "total": 12, "now": "provisioning mysql-9.7 (Debian sid; once per machine)"}]


def test_measure_refuses_a_running_run_that_already_has_results(tmp_path):
    p = checks.resolve(tp, "smoke")
    run = ownership.open_run(tp, p, root=tmp_path)
    (run.path / "tables").mkdir()
    with pytest.raises(RuntimeError, match="append-only"):
        experiment.measure(tp, p, run, progress=False)


def test_an_ended_run_without_steps_is_not_measured_and_has_nothing_to_analyse(tmp_path):
    p = checks.resolve(tp, "smoke")
    run = ownership.open_run(tp, p, root=tmp_path)
    run.finish("interrupted", "interrupted by SIGTERM")
    with pytest.raises(errors.NothingMeasured, match="ended interrupted before any step finished"):
        experiment.measure(tp, p, run, progress=False)  # and nothing to analyse: the notebook stops
    assert sorted(x.name for x in run.path.iterdir()) == ["metadata.json"]  # no server, no table


# every kind of bad input: one clear message, exit code 2, no traceback, nothing left behind
RUN = ["run", "thread_pool", "--profile", "smoke"]
BAD_INPUT = {
    "out of range": (["-p", "threads", "[0,8]"], "threads: each must be between 1 and 4096"),
    "unknown workload": (["-p", "workloads", "tpcx"], "workloads: need distinct values"),
    "wrong type": (["-p", "duration", "soon"], "duration: expected a whole number, got 'soon'"),
    "unknown parameter": (["-p", "repeat", "3"], "repeat: unknown parameter"),
    "unknown flavour": (["-p", "flavour", "mysql-3.23"], "flavour: unknown server flavour"),
    "driver-owned setting": (["-p", "settings", '{"port": 3306}'],
                             "settings: ['port'] are set by the driver"),
    "given twice": (["-p", "threads", "1", "-p", "threads", "2"], "threads: given more than once"),
    "malformed list": (["-p", "threads", "[1,4"],
                       "threads: malformed JSON '[1,4': expected ',' delimiter at column 5"),
    "malformed mapping": (["-p", "settings", '{"a":'], "settings: malformed JSON"),
    "not a boolean": (["-p", "aa_control", "maybe"], "aa_control: expected true/false, got 'maybe'"),
    "CPUs not here": (["-p", "server_cpus", "0-999"], "server_cpus: CPUs"),
    "setting the server lacks": (["-p", "settings", '{"no_such_option": 1}'],
                                 "settings: ['no_such_option'] are not options of mariadb-10.11"),
    "type and range at once": (["-p", "duration", "soon", "-p", "repeats", "0"],
                               "duration: expected a whole number, got 'soon'\n  - repeats: must be ≥ 1"),
}


def in_process(capsys, argv: list[str]) -> tuple[int, str, str]:
    """`dbstudies ARGV` run by the CLI's own `main` in this process (no interpreter to start):
    (exit code, stdout, stderr). A check that let bad input through would start a server or a
    kernel from here, which the suite's process recorder fails as unmarked."""
    from dbstudies import cli
    try:
        code = cli.main(argv)
    except SystemExit as e:  # argparse's own errors
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("args, message", BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_cli_rejects_bad_parameters_before_any_server_starts(tmp_path, capsys, args, message):
    code, out, err = in_process(capsys, [*RUN, *args, "--runs-dir", str(tmp_path)])
    assert (code, out) == (2, ""), err
    assert message in err and err.startswith("dbstudies: invalid parameters:")
    assert list(tmp_path.iterdir()) == []  # no run directory, so no server was ever started
    assert processes_mentioning(str(tmp_path)) == []


@pytest.mark.notebook
def test_a_bad_parameter_ends_the_dbstudies_process_with_one_line_and_exit_code_2(tmp_path):
    """The same check from the shell: the process exits 2 with one message, no traceback."""
    p = subprocess.run([*CLI, *RUN, "-p", "threads", "[0,8]", "-p", "repeat", "3", "--runs-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (2, ""), p.stderr
    head, *problems = p.stderr.splitlines()
    assert head == "dbstudies: invalid parameters:" and len(problems) == 2, p.stderr
    assert problems[0].startswith("  - repeat: unknown parameter — did you mean 'repeats'?; known: flavour, repeats,")
    assert problems[1] == "  - threads: each must be between 1 and 4096, got [0, 8]"
    assert list(tmp_path.iterdir()) == []  # nothing was created, so nothing started


def test_cli_bad_paths_and_names_are_one_line_errors(tmp_path, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    (tmp_path / "empty").mkdir()
    (tmp_path / "no-notebook").mkdir()
    (tmp_path / "no-notebook" / "metadata.json").write_text('{"status": "failed"}')
    cases = [
        ([*RUN, "--runs-dir", str(a_file)], f"cannot create a run directory under {a_file}: Not a directory"),
        ([*RUN, "--runs-dir", str(a_file / "below")], "cannot create a run directory under"),
        (["run", "tpcc_42", "--runs-dir", str(tmp_path / "empty")], "unknown study 'tpcc_42'"),
        (["run", "thread_pool", "--profile", "huge"], "unknown profile 'huge'; choose one of smoke, quick, full, count"),
        (["report", str(tmp_path / "missing")], "neither a run directory (one holds metadata.json) nor a packed run"),
        (["report", str(tmp_path / "no-notebook")], "names no study or parameters: nothing to analyse"),
    ]
    for argv, message in cases:
        code, _, err = in_process(capsys, argv)
        assert code == 2 and message in err, (argv, err)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a-file", "empty", "no-notebook"]
    assert list((tmp_path / "empty").iterdir()) == []


@pytest.mark.notebook
def test_ctrl_c_during_a_run_interrupts_within_seconds(tmp_path):
    p = subprocess.Popen([*CLI, "run", "thread_pool", "--profile", "smoke", "-p", "duration", "3",
                          "-p", "repeats", "3", "--runs-dir", str(tmp_path)],
                         start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        run_dir = wait_for(lambda: list(tmp_path.glob("thread_pool/*/metadata.json")),
                           60, "the run directory")[0].parent
        wait_for(lambda: steps_on_disk(Run.open(run_dir)), 240, "the first measured step",
                 interval=0.5)
        marker = str(run_dir / "server")
        assert processes_mentioning(marker), "the server should be running mid-study"
        os.killpg(p.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
        run = Run.open(run_dir)
        wait_for(lambda: run.status == "interrupted", 15, "the run marked interrupted")
        wait_for(lambda: processes_mentioning(marker) == [], 15, "no server left")
        p.wait(240)  # then the steps that finished are analysed, and the report written
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    out = p.stdout.read().decode()
    assert p.returncode == 130, out
    assert "dbstudies: interrupted (SIGINT)" in out and "analysing the steps that finished" in out
    assert f"dbstudies: report {run_dir / 'report.html'}" in out and "Traceback" not in out
    assert run.status == "interrupted" and run.metadata["error"] == "interrupted by SIGINT"
    assert len(results.measured(run)) >= 1
    assert (run_dir / "notebook-interrupted.ipynb").exists()  # the measuring notebook, kept
    check_partial_report(run, "interrupted", "interrupted by SIGINT")


def test_cli_runs_the_study_end_to_end(smoke_run):
    """The README/issue example: a smoke run with two thread counts, report rendered
    (the suite's one execution of the notebook, shared with test_notebooks.py)."""
    cmd = ("dbstudies run thread_pool --profile smoke -p threads '[1,64]' -p duration 2 -p cpu_profile true "
           """-p positive_control '{"pause_ms": 200, "every_s": 1}'""")
    assert cmd in (REPO / "README.md").read_text()
    assert shlex.split(cmd)[2:] == ["thread_pool", *SMOKE_RUNS["thread_pool"]]
    p, run_dir = smoke_run("thread_pool")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    run = Run.open(run_dir)
    meta = run.metadata
    assert meta["status"] == "complete" and meta["parameters"]["threads"] == [1, 64]
    assert meta["parameters"]["duration"] == 2 and meta["parameters"]["profile"] == "smoke"
    assert meta["servers"][0]["version"].startswith("10.11")
    assert "[mysqld]" in meta["servers"][0]["my_cnf"] and meta["servers"][0]["global_variables"]
    arms = [*th.SCHEDULERS, th.PER_CONNECTION + pauses.SUFFIX]  # the positive control's paused twin too
    assert {s["label"] for s in meta["servers"]} == {*(f"prepare {a}" for a in arms), *arms}
    assert meta["design"] == "paired" and meta["rounds_done"] == 2
    assert {(d["server"], d["schema"]) for d in meta["data"]} == {(a, "sbtest") for a in arms}
    assert all(d["bytes"] > 0 and d["rows"] > 0 for d in meta["data"])  # measured after the load
    assert meta["owner"]["kind"] == "cli" and meta["owner"]["pid"] != os.getpid()
    pool = next(s for s in meta["servers"] if s["label"] == th.POOL)
    assert pool["global_variables"]["thread_handling"] == "pool-of-threads"
    assert int(pool["global_variables"]["max_connections"]) >= 64
    assert meta["sysbench"]["version"] == "1.0.20"
    raw = run.table("steps")  # every sysbench run is a row: warm-ups and busy retries too
    # two rounds, then the profiled cells (cpu_profile: smoke's 2 rounds of their own, each after a
    # restart of the compared arms' servers; the paused twin is neither profiled nor restarted)
    assert (raw["phase"] == "warmup").sum() == 3 * 2 + 2 * 2 and (raw["phase"] == "measure").sum() == 2 * 2 * 3
    # paired: each cell's three arms back to back, no arm in the same place in both rounds
    m = raw[raw["phase"] == "measure"].sort_values("step")
    assert (m.groupby("pair")["arm"].apply(sorted).map(tuple) == tuple(sorted(arms))).all()
    assert (m.groupby(["threads", "position"])["arm"].nunique() == 2).all()
    assert m["settle_s"].isna().all()  # point selects write nothing: no server to wait for
    # the run's other servers are up and read: what foreign processes used is the rest of "other"
    assert m["host_foreign_pct"].notna().all() and (m["host_foreign_pct"] <= m["host_other_pct"] + 1e-9).all()
    assert sum(c["command"] == "run" for c in meta["sysbench"]["calls"]) == len(raw)
    steps = results.measured(run)
    assert sorted(steps["threads"].unique()) == [1, 64] and len(steps) == 12
    # each step asked sysbench for the profile's 2 s (how long it ran is the host's business)
    asked = [c["argv"] for c in meta["sysbench"]["calls"] if c["command"] == "run"]
    assert sum("--time=2" in argv for argv in asked) >= len(steps)
    steps = steps[steps["arm"].isin(th.SCHEDULERS)]  # the costs of normal steps: not of a paused server
    # per-transaction costs: a point select reads one row; its client blocks on each answer
    # (≈ 1 voluntary switch: with one connection always; with 64 on 2 CPUs an answer is
    # sometimes there before the client asks — 0.79 seen), the server's threads switch too
    # (counted over all of them: the main thread alone would give ≈ 0); no redo; server
    # CPU per transaction agrees with its CPU % and TPS. A counter's rate comes from the 1 Hz
    # samples, TPS from sysbench's own window: on a 2-s step the two windows differ by up to a
    # sampling interval's jitter, so one step may be off by a fifth (0.90, 0.876, 0.815 seen on
    # a busy host). What a wrong derivation gives is none, half or twice (a count taken for a
    # rate over 2 s): every step lies within 0.7–1.4 (nearer one than a half or two) and the
    # median step within 0.85–1.15; the client's switches per transaction likewise at one thread
    # (one 2-s step read 0.57 on a loaded fresh-clone run: its sampled window held half its
    # transactions — each step is more than none and under twice; the median decides)
    def about_one(per_txn) -> bool:  # noqa: ANN001 - a Series of per-transaction counts
        return bool(per_txn.between(0.3, 1.9).all() and 0.85 <= per_txn.median() <= 1.15)
    assert about_one(steps["rows_read_per_txn"]), steps["rows_read_per_txn"]
    cs = steps.set_index("threads")["cs_client_voluntary_per_txn"]
    # sysbench's own counters are read from its process, whose first reading may fall in its
    # start-up: one 2-s step's window can hold half its transactions (0.46 seen at one thread,
    # 0.48 at 8 on a busy host), or twice them (1.79 at one thread, a smoke run whose client
    # shares its CPU with the server; 0.37 and 0.55 in two of four one-thread steps of a loaded
    # fresh-clone run, whose median then read 0.76). Per step: more than none and under three; a
    # wrong derivation moves every step, so a step at one thread that reads about one decides
    assert cs.between(0.2, 3).all() and cs.loc[[1]].between(0.85, 1.15).any(), cs
    assert ((steps["cs_server_voluntary_per_txn"] + steps["cs_server_involuntary_per_txn"]) > 0.25).all()
    assert (steps["redo_bytes_per_txn"] < 1).all()
    cpu = steps["cpu_server_pct"] / 100 / steps["tps"] * 1e6
    assert ((steps["cpu_server_us_per_txn"] / cpu).between(0.8, 1.25)).all(), (steps["cpu_server_us_per_txn"], cpu)
    intervals = run.table("intervals")
    # one per second of a 2-s step; sysbench may drop the last, which coincides with its end
    assert set(intervals[intervals["step"] > 0].groupby("step").size()) <= {1, 2, 3}
    warmups = raw[raw["phase"] == "warmup"]["step"]
    assert set(intervals[intervals["step"].isin(warmups)].groupby("step").size()) <= {1}  # 1 s warm-ups
    for name in ("notebook.ipynb", "report.html", "figures/qps_vs_threads.png", "figures/qps_pairs.png",
                 "figures/p99_vs_threads.svg", "server/pool-of-threads/mariadb-10.11.err"):
        assert (run_dir / name).exists(), name
    html = (run_dir / "report.html").read_text()
    assert "Relative results" in html and "study.measure" not in html  # code hidden
    assert "paired rounds: 2 rounds × 2 cells, the 3 arms of a cell back to back" in html
    assert "the highest median QPS of the thread counts measured" in html  # the computed conclusion
    assert "Data against the buffer pool" in html and "--threads={1, 64}" in html
    assert ("<td><code>thread_handling</code> <small>governs what the study varies</small></td>"
            "<td>one-thread-per-connection</td><td>one-thread-per-connection</td><td>pool-of-threads</td>") in html
    assert "<code>thread_pool_stall_limit</code> <small>governs what the study varies</small>" in html
    assert "<a href='server/pool-of-threads/my.cnf'>pool-of-threads</a>" in html  # each arm's my.cnf
    assert processes_mentioning(str(run_dir)) == []
    # the terminal: progress, the conclusion as text, the report's path — not the notebook
    assert p.stdout.startswith(f"dbstudies: thread_pool (smoke), about 2 min; run directory {run_dir}\n")
    # the answer in plain text: at a glance first, then the lead words; the rest is the report's
    assert "\nThe answer\n\n- QPS (2 cells): " in p.stdout and "**" not in p.stdout
    glance, words = p.stdout.index("\n- QPS (2 cells): "), p.stdout.index("\nThroughput (QPS) against one-thread-per-connection: pool-of-threads ")
    assert glance < words and "the highest median QPS of the thread counts measured" not in p.stdout
    assert p.stdout.endswith(f"dbstudies: report {run_dir / 'report.html'}\n"
                             f"dbstudies: run complete: {run_dir}\n")
    # the progress bar: the 12 planned steps, then the profiled ones (cpu_profile) counted on,
    profiled = len(meta["cpu_profile_plan"])
    # as a fraction that never falls: once they grow the total, the count without one
    shown = [int(x) for x in re.findall(r"(\d+)%\|", p.stderr)]
    assert shown == sorted(shown) and re.findall(r"(\d+)/12 \[", p.stderr)
    assert re.findall(r"(\d+)step \[", p.stderr)[-1] == str(12 + profiled)
    for noise in ("<IPython", "<Figure", "Executing", "WARNING", "run directory: "):
        assert noise not in p.stdout + p.stderr, noise
    # the other subcommands: list the studies, re-render a report from the run's notebook
    (run_dir / "report.html").unlink()
    p = subprocess.run([*CLI, "report", str(run_dir)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and (run_dir / "report.html").read_text() == html
    p = subprocess.run([*CLI, "list"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("checkpoint_stalls: Checkpoint and flushing stalls")
    assert f"  threads (quick: {tp.PROFILES['quick']['threads']}, smoke: " in p.stdout and "— client thread counts" in p.stdout
    assert "  aa_control (quick: False)" in p.stdout
