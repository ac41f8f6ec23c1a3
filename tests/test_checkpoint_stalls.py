"""The checkpoint-stall study: its parameters (checked by the server itself before anything
starts) and its smoke run (the notebook, executed once per session): probes on the 1-s grid,
per-run summaries, the intent said in the server's dialect, the report."""
import json

import pytest

from dbstudies.kit.study import load
from dbstudies.kit.studykit import arms_of
from dbstudies.measure import checks
from dbstudies.store import results
from dbstudies.store.params import ParamError
from dbstudies.store.results import Run
from dbstudies.store.tables import INTERVALS, STATUS

cs = load("checkpoint_stalls")


def problems(**overrides):
    with pytest.raises(ParamError) as e:
        checks.resolve(cs, "smoke", **overrides)
    return e.value.problems


def test_configs_are_checked_by_the_server_before_anything_starts():
    found = problems(configs={"base": {"redo_log": "1G"},
                              "typo": {"innodb_io_capacityy": 100},
                              "bad value": {"innodb_flush_log_at_trx_commit": 7},
                              "owned": {"datadir": "/x"},
                              "no intent": {"redo_log": "huge"}},
                     stall_fraction=1.5)
    text = "\n".join(found)
    assert "configs[typo]: ['innodb_io_capacityy'] are not options of mariadb-10.11" in text
    assert "configs[bad value]: mariadb-10.11 refuses a value:" in text and "adjusted to 3" in text
    assert "configs[owned]: ['datadir'] are set by the driver" in text
    assert "configs[no intent]: mariadb-10.11 refuses a value:" in text  # innodb_log_file_size=huge
    assert "stall_fraction: must be in (0, 1)" in text
    assert not [m for m in found if m.startswith("configs[base]")]
    assert problems(configs={"a": 1})[0].startswith("configs: need named settings")


def test_an_intent_a_flavour_cannot_say_is_a_parameter_error():
    found = problems(flavour="mysql-9.7", configs={"pool": {"thread_pool": True}})
    assert any("configs[pool]: the thread pool is not available on mysql-9.7" in m for m in found)


def test_arms_split_intent_from_plain_settings():
    p = checks.resolve(cs, "smoke", configs={"a": {"redo_log": "64M", "innodb_io_capacity": 400},
                                     "b": {"redo_log": "1G", "innodb_adaptive_flushing": "OFF"}})
    a, b = arms_of(cs, p)
    assert (a.label, dict(a.settings), a.intent.redo_log) == ("a", {"innodb_io_capacity": 400}, "64M")
    assert b.intent.asdict() == {"redo_log": "1G"} and b.settings == {"innodb_adaptive_flushing": "OFF"}


@pytest.mark.notebook
@pytest.mark.server
def test_smoke_run_probes_series_and_report(smoke_run):
    proc, run_dir = smoke_run("checkpoint_stalls")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = Run.open(run_dir)
    meta = run.metadata
    # the redo log size is an intent, said as innodb_log_file_size by MariaDB
    arms = {a["label"]: a for a in meta["arms"]}
    assert arms["redo 16M"]["intent"] == {"redo_log": "16M"}
    assert arms["redo 16M"]["settings"] == {"innodb_log_file_size": "16M"}
    used = {s["label"]: s["global_variables"] for s in meta["servers"]}
    assert used["redo 16M"]["innodb_log_file_size"] == str(16 * 2 ** 20)
    assert used["redo 1G"]["innodb_log_file_size"] == str(2 ** 30)
    assert used["redo 1G"]["innodb_flush_log_at_trx_commit"] == "0"  # the common settings
    # every step stored whole: nothing left streaming
    assert not list((run.path / "tables").glob("*/stream-*.jsonl"))
    steps = results.measured(run)
    series = cs.series(run, steps)
    assert len(series) == len(run.table(INTERVALS)[lambda d: d.step > 0]) and len(steps) == 4
    probes = ["checkpoint_age_pct", "redo_bytes_per_s", "dirty_pages", "pages_flushed_per_s",
              "server_write_bytes_per_s", "disk_write_bytes_per_s", "cpu_server_pct"]
    assert series[probes].notna().all().all(), series[probes].isna().sum()
    assert (series["redo_bytes_per_s"] > 0).all() and (series["server_write_bytes_per_s"] >= 0).all()
    age = series.groupby("arm")["checkpoint_age_pct"].median()
    assert age["redo 16M"] > 3 * age["redo 1G"]  # a small log runs near its maximum age
    runs = cs.runs(series, steps, checks.resolve(cs, "smoke"))
    assert len(runs) == 4 and (runs["kb_per_txn"] > 0).all() and (runs["median_tps"] > 0).all()
    assert set(runs["stall_seconds"]) <= set(range(5))
    status = run.table(STATUS)
    assert {"Innodb_checkpoint_age", "Innodb_checkpoint_max_age", "server_write_bytes",
            "disk_write_bytes"} <= set(status["variable"])
    html = (run.path / "report.html").read_text()
    for figure in ("timeline_oltp_write_only_4", "tps_distribution", "runs_oltp_write_only_4"):
        assert (run.path / "figures" / f"{figure}.png").exists()
    assert html.count("<img") == 5 and "Traceback" not in html
    assert "checkpoint age" in html and "KB written per transaction" in html
    assert "redo 16M" in proc.stdout and "\nThe answer\n" in proc.stdout
    json.dumps(meta)  # metadata stays plain JSON


@pytest.mark.notebook
@pytest.mark.server
def test_probes_give_checkpoint_age_and_io_in_both_families(smoke_run):
    """The versions smoke run measures MariaDB 10.11 and MySQL 9.7 (under bwrap): checkpoint
    age comes from MariaDB's own status and from MySQL's LSNs and redo capacity, and the
    server's I/O is read from the real server process, not its launcher."""
    from dbstudies.analysis import timeseries
    proc, run_dir = smoke_run("versions")
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = Run.open(run_dir)
    status = run.table(STATUS)
    assert {"Innodb_redo_log_current_lsn", "Innodb_redo_log_checkpoint_lsn",
            "Innodb_redo_log_capacity_resized", "Innodb_checkpoint_max_age"} <= set(status["variable"])
    series = timeseries.per_second(run, results.measured(run))
    for arm, g in series.groupby("arm"):
        assert g["checkpoint_age_pct"].between(0, 100).all(), (arm, g["checkpoint_age_pct"].describe())
        assert g["server_read_bytes_per_s"].notna().all() and g["redo_bytes_per_s"].notna().all(), arm
        assert (g["cpu_server_pct"] > 0).mean() > 0.5, arm


@pytest.mark.notebook
@pytest.mark.server
def test_the_smoke_run_pairs_long_write_steps_by_round(smoke_run):
    """design paired (the default here): every configuration on a server of its own, the steps
    of a round back to back (the idle one's flushing waited out, `settle_s`), the verdicts from
    per-round ratios; the planner predicts the verdict tables from the same run summaries."""
    from dbstudies import stats
    from dbstudies.workflows import planner
    proc, run_dir = smoke_run("checkpoint_stalls")
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = Run.open(run_dir)
    p = checks.resolve(cs, "smoke")
    assert p.design == "paired"
    steps = results.measured(run)
    assert len(steps) == 4 and sorted(steps.groupby("pair")["arm"].nunique()) == [2, 2]
    assert steps["settle_s"].notna().all()  # write steps: each one's server settled after it
    runs = cs.runs(cs.series(run, steps), steps, p)
    assert (runs["pair"] > 0).all()
    rel = cs.relative(runs, p, "tps")
    assert stats.is_paired_table(rel) and rel["n_baseline"].tolist() == [2]
    assert len({s["datadir"] for s in run.metadata["servers"]}) == 2
    noise = planner.cell_noise(cs, [run], 0)  # median TPS
    assert noise[["workload", "threads", "df"]].values.tolist() == [["oltp_write_only", 4, 1]]
