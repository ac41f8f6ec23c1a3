"""A sysbench Lua script of the user's own as a workload: it runs through our report wrapper
like the bundled ones (intervals, histogram, per-step costs), its options come from
`workload_options`, the run keeps a copy with its SHA-256, and a script sysbench could not
run is a parameter error before any server starts."""
import json
import subprocess
import sys

import pytest
from conftest import FIXTURES, REPO

from dbstudies import workloads
from dbstudies.core import paths
from dbstudies.core.errors import ParamError
from dbstudies.kit.study import load
from dbstudies.measure import checks
from dbstudies.store import results
from dbstudies.store.results import Run

CLI = [sys.executable, "-m", "dbstudies"]
SCRIPT = FIXTURES / "lua" / "kv_counter.lua"


BUNDLED = "/usr/share/sysbench/oltp_point_select.lua"
ON_COMMON = FIXTURES / "lua" / "oltp_point_and_range.lua"
LEDGER = FIXTURES / "lua" / "multifile" / "ledger.lua"


@pytest.mark.notebook
@pytest.mark.server
def test_sysbench_s_own_script_by_its_path_and_one_built_on_oltp_common_run_in_the_thread_pool_smoke_study(tmp_path):
    """Real scripts as a user names them: sysbench's bundled point-select script by its path
    and one of ours on its `oltp_common` (which refuses to load without a command). Both use
    the sbtest tables at the study's scale, prepared once; an option of `oltp_common` given
    as `workload_options` reaches every call."""
    p = subprocess.run([*CLI, "run", "thread_pool", "--profile", "smoke", "-p", "workloads",
                        json.dumps([BUNDLED, str(ON_COMMON.relative_to(REPO))]), "-p", "workload_options",
                        '{"--skip-trx": "on"}', "-p", "threads", "[2]", "-p", "duration", "1", "-p", "warmup", "0",
                        "--runs-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=600, cwd=REPO)
    assert p.returncode == 0, p.stderr[-3000:]
    run = Run.open(next(tmp_path.glob("thread_pool/*")))
    kept = run.metadata["workload_scripts"]
    assert [k["copy"] for k in kept] == ["workloads/oltp_point_select.lua", "workloads/oltp_point_and_range.lua"]
    assert kept[1]["sha256"] == paths.sha256(ON_COMMON) == paths.sha256(run.path / kept[1]["copy"])
    steps = results.measured(run)
    # named as given: the same file from the repository as from the shell's folder
    assert set(steps["workload"]) == {BUNDLED, "tests/fixtures/lua/oltp_point_and_range.lua"}
    assert len(steps) == 8 and (steps["tps"] > 0).all()  # 2 workloads × 2 rounds × 2 arms
    assert steps["cpu_server_us_per_txn"].notna().all()
    assert set(run.table("histograms")["step"]) >= set(steps["step"])
    calls = run.metadata["sysbench"]["calls"]
    prepares = [c for c in calls if c["command"] == "prepare"]
    # one family (sbtest) prepared once per server, by its first workload, at the study's scale
    assert len(prepares) == 2 and all(c["workload"] == BUNDLED and "--tables=1" in c["argv"] for c in prepares)
    runs = [c for c in calls if c["command"] == "run"]
    assert runs and all("--skip-trx=on" in c["argv"] and "--table-size=1000" in c["argv"] for c in runs)
    assert {c["env"]["DBSTUDIES_SCRIPT"] for c in runs} == {BUNDLED, str(ON_COMMON)}
    html = (run.path / "report.html").read_text()
    assert "oltp_point_select.lua" in html and "oltp_point_and_range.lua" in html


@pytest.mark.parametrize("script", [BUNDLED, ON_COMMON, LEDGER, SCRIPT])
def test_real_scripts_are_accepted_as_sysbench_runs_them(script):
    p = _resolve(workloads=[str(script)], workload_options={})
    assert p.workloads == [str(script)]


def test_scripts_on_oltp_common_share_the_sbtest_tables_and_the_study_s_scale():
    assert workloads.family(BUNDLED) == workloads.family(str(ON_COMMON)) == "oltp"
    assert workloads.family(str(LEDGER)) == str(LEDGER)
    assert workloads.options(BUNDLED, {"tables": 3, "table_size": 10}) == ["--tables=3", "--table-size=10"]
    assert workloads.options(str(LEDGER), {"tables": 3, "table_size": 10}) == []


def test_options_a_script_does_not_declare_are_refused_before_anything_starts():
    with pytest.raises(ParamError, match=r"oltp_point_select.lua: sysbench refuses the option --scale=2") as e:
        _resolve(workloads=[BUNDLED, str(LEDGER)], workload_options={"--scale": 2})
    assert len(e.value.problems) == 1  # the ledger declares --scale; oltp_common does not
    assert _resolve(workloads=[str(LEDGER)], workload_options={"--scale": 2}).workload_options == {"--scale": 2}


def _resolve(**overrides):
    return checks.resolve(load("thread_pool"), "smoke", **overrides)


@pytest.mark.parametrize("script, message", [
    (None, "no such Lua script"),
    ("function event( end\n", "sysbench cannot load it: "),
    ("x = 1\n", "defines no `event` function"),
    ("function event() end\n", "defines no prepare"),
    ('require("oltp_common")\n', "defines no `event` function"),  # loads: it is given a command
])
def test_a_script_sysbench_cannot_run_is_a_parameter_error(script, message, tmp_path):
    path = tmp_path / "mine.lua"
    if script is not None:
        path.write_text(script)
    with pytest.raises(ParamError, match=message) as e:
        _resolve(workloads=[str(path)])
    assert len(e.value.problems) == 1


def test_options_are_for_scripts_and_plain_values(tmp_path):
    with pytest.raises(ParamError, match="workload_options: options go to scripts of your own"):
        _resolve(workload_options={"--rows": 5})
    with pytest.raises(ParamError, match=r"workload_options: '--rows': an option name and a plain value"):
        _resolve(workloads=[str(SCRIPT)], workload_options={"--rows": [1, 2]})
    with pytest.raises(ParamError, match="this study runs only its own workloads"):
        checks.resolve(load("compression"), "smoke", workloads=[str(SCRIPT)])


@pytest.mark.server  # `dbstudies run` (it stops before any server here, which is what it tests)
@pytest.mark.notebook
def test_a_bad_script_stops_the_cli_before_any_run_exists(tmp_path):
    bad = tmp_path / "bad.lua"
    bad.write_text("x = 1\n")
    p = subprocess.run([*CLI, "run", "thread_pool", "--profile", "smoke", "-p", "workloads",
                        json.dumps([str(bad)]), "--runs-dir", str(tmp_path / "runs")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "defines no `event` function" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "runs").exists()
