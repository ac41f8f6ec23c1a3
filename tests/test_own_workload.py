"""A sysbench Lua script of the user's own as a workload: it runs through our report wrapper
like the bundled ones (intervals, histogram, per-step costs), its options come from
`workload_options`, the run keeps a copy with its SHA-256, and a script sysbench could not
run is a parameter error before any server starts."""
import json
import subprocess
import sys

import pytest
from conftest import FIXTURES, REPO

from dbstudies import checks, paths, results
from dbstudies.errors import ParamError
from dbstudies.results import Run
from dbstudies.study import load

CLI = [sys.executable, "-m", "dbstudies"]
SCRIPT = FIXTURES / "lua" / "kv_counter.lua"


@pytest.mark.server
def test_a_script_of_ours_runs_in_the_thread_pool_smoke_study(tmp_path):
    p = subprocess.run([*CLI, "run", "thread_pool", "--profile", "smoke", "-p", "workloads",
                        json.dumps([str(SCRIPT.relative_to(REPO))]), "-p", "workload_options",
                        '{"--rows": 50}', "-p", "threads", "[2]", "-p", "duration", "1", "-p", "warmup", "0",
                        "--runs-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=600, cwd=REPO)
    assert p.returncode == 0, p.stderr[-3000:]
    run = Run.open(next(tmp_path.glob("thread_pool/*")))
    kept = run.metadata["workload_scripts"]
    assert [k["copy"] for k in kept] == ["workloads/kv_counter.lua"]
    assert kept[0]["sha256"] == paths.sha256(SCRIPT) == paths.sha256(run.path / kept[0]["copy"])
    steps = results.measured(run)
    # named as given: the same file from the repository as from the shell's folder
    assert set(steps["workload"]) == {"tests/fixtures/lua/kv_counter.lua"} and len(steps) == 4  # 2 rounds × 2 arms
    assert (steps["tps"] > 0).all() and steps["cpu_server_us_per_txn"].notna().all()
    histograms = run.table("histograms")
    assert set(histograms["step"]) >= set(steps["step"])
    runs = [c for c in run.metadata["sysbench"]["calls"] if c["command"] == "run"]
    assert runs and all("--rows=50" in c["argv"] and c["env"]["DBSTUDIES_SCRIPT"] == str(SCRIPT) for c in runs)
    html = (run.path / "report.html").read_text()
    assert "kv_counter.lua" in html


def _resolve(**overrides):
    return checks.resolve(load("thread_pool"), "smoke", **overrides)


@pytest.mark.parametrize("script, message", [
    (None, "no such Lua script"),
    ("function event( end\n", "sysbench cannot load it: "),
    ("x = 1\n", "defines no `event` function"),
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


def test_a_bad_script_stops_the_cli_before_any_run_exists(tmp_path):
    bad = tmp_path / "bad.lua"
    bad.write_text("x = 1\n")
    p = subprocess.run([*CLI, "run", "thread_pool", "--profile", "smoke", "-p", "workloads",
                        json.dumps([str(bad)]), "--runs-dir", str(tmp_path / "runs")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "defines no `event` function" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "runs").exists()
