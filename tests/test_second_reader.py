"""What a second reader of a published report finds (issue 43), on a recorded quick
thread-pool run (tests/fixtures/quick: 16 rounds × 8 cells, measured on this machine while it
was busy, its tables compacted): re-analysed and read in Chromium at 1,300 px with the network
off, its report must carry none of the defects that reader found — and the numbers behind its
sentences are rechecked here against the run's own tables."""
import json
import shutil
import subprocess
import sys

import pytest
from conftest import FIXTURES, REPO
from report_checks import read_in_chromium, report_problems, unused_option_problems

from dbstudies.analysis import budget, caveats, costs
from dbstudies.kit.study import load
from dbstudies.measure import checks
from dbstudies.store.results import Run

QUICK = next((FIXTURES / "quick" / "thread_pool").iterdir())


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("quick") / "thread_pool" / QUICK.name
    shutil.copytree(QUICK, run_dir)
    p = subprocess.run([sys.executable, "-m", "dbstudies", "report", "--analyse", str(run_dir)],
                       capture_output=True, text=True, timeout=600, cwd=REPO)
    assert p.returncode == 0, p.stderr[-3000:]
    seen = read_in_chromium(run_dir / "report.html", tmp_path_factory.mktemp("shot") / "quick.png")
    return run_dir, seen


@pytest.mark.notebook
@pytest.mark.browser
def test_the_quick_report_read_offline_at_1300_px_has_none_of_the_defects(quick_report):
    run_dir, seen = quick_report
    assert seen["requests"] == []
    assert seen["widest"][0] <= 1280 and seen["page_width"] <= 1300, seen["widest"]
    assert 0 < seen["grid"] <= 868, seen["grid"]  # 8 cells × 6 comparisons fit JupyterLab's notebook column
    assert report_problems(seen["dom"]) == []
    assert unused_option_problems(seen["dom"], Run.open(run_dir).metadata["parameters"]) == []
    for f in sorted((run_dir / "figures").glob("*.json")):
        props = json.loads(f.read_text())
        assert props["problems"] == [], (f.name, props["problems"])
    qps = json.loads((run_dir / "figures" / "qps_vs_threads.json").read_text())
    assert all(p["series"] == 2 for p in qps["panels"])  # both arms, counted (it said 0 before)


@pytest.mark.notebook
@pytest.mark.browser
def test_the_quick_answer_says_what_its_own_data_qualify(quick_report):
    _, seen = quick_report
    import html as html_lib
    import re
    text = re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", seen["dom"])))
    throughput = text.split("Throughput (QPS) against", 1)[1].split(" P50 latency against", 1)[0]
    worse = next(c for c in throughput.split("; ") if "lower (worse)" in c)
    assert re.search(r"is sysbench's own and [\d–]+ % the server's, on the same 2 CPUs as the server: mostly the client's cost", worse)
    assert "Typical and slowest transactions move apart with pool-of-threads" in text
    assert re.search(r"MariaDB 5\.5 thread-pool post : .*? — not testable here in throughput: the source ran sysbench on cores of its own", text)
    assert "the highest median QPS of the thread counts measured (1, 16, 64, 256): one-thread-per-connection" in text
    assert "differ in what the study varies — thread_handling" in text and "still differ" not in text
    assert re.search(r"The first second of a step differs from the rest of it\..*?median of \d+ of the cell's 32 steps", text)


def test_the_quick_runs_numbers_are_said_once_and_its_tail_ratio_reads_the_tail():
    """In-process on the recorded run: the CPU budget's client µs change is the cost table's
    paired difference (one estimate per quantity), and the tail ratio's paired ratio is p99's
    over p50's (the body divided out, nothing estimated twice)."""
    study = load("thread_pool")
    run = Run.open(QUICK)
    p = checks.resolve_cell(study, {"run_dir": str(QUICK)})
    said = study.answer(run, p)
    b = budget.judged_budget(said.tables, "qps", run.metadata["host"]["cpus"])
    arms = study.arms(p)
    table = costs.tables(said.tables["steps"], arms, p)["cpu_client_us_per_txn"].set_index(["workload", "threads", "candidate"])
    assert len(b)
    for r in b.itertuples():
        budget_pct = (r.client_us[1] / r.client_us[0] - 1) * 100
        assert budget_pct == pytest.approx(table.loc[(r.workload, r.threads, r.candidate), "delta_pct"], abs=1e-6)
    # the tail ratio divides each step's body out of its p99: per cell its paired ratio is p99's over p50's
    s = said.tables["steps"]
    assert ((s["tail_ratio"] - s["latency_p99_ms"] / s["latency_p50_ms"]).abs() < 1e-9).all()
    p50, p99, tail = (said.tables[m].set_index(["workload", "threads"])["ratio"] for m in ("p50", "p99", "tail"))
    judged = tail.notna()  # read_only at 1 thread: its slowest 1 % is 17 transactions a step, not judged
    assert judged.sum() == 7 and ((tail[judged] - p99[judged] / p50[judged]).abs() < 1e-9).all()
    assert said.tables["tail"].set_index(["workload", "threads"]).loc[("oltp_read_only", 1), "verdict"].startswith(
        "not judged: its slowest 1 % is 17 transactions a step")


def test_the_seconds_judged_are_said_and_dropping_the_first_changes_no_quick_verdict():
    """Which seconds the QPS verdicts judge, and what judging each step past its first second
    would change, on the recorded quick run: no verdict, the largest effect moving 2.9 points."""
    study = load("thread_pool")
    run = Run.open(QUICK)
    p = checks.resolve_cell(study, {"run_dir": str(QUICK)})
    said = study.answer(run, p)
    text, changed = caveats.seconds_judged(run, said.tables["steps"], said.tables["qps"], p)
    assert not changed and text.startswith("QPS verdicts judge each step whole (3 s); judged on its seconds "
                                           "after the first, none of 8 changes — the largest move of an effect")
    moved = float(text.split("effect ")[1].split(" points")[0])
    assert 0 < moved < 10
