"""Re-analysing a finished run: the run's own measurement parameters, the analysis
parameters of the cell (or `-p`), nothing measured, nothing the run wrote overwritten — a
re-analysis at other analysis parameters is a variant of its own inside the run."""
import hashlib
import re
import shutil
import subprocess
import sys

import pytest
from conftest import FIXTURES, REPO

from dbstudies.core import paths
from dbstudies.core.errors import ParamError
from dbstudies.kit.study import load
from dbstudies.measure import checks, ownership
from dbstudies.store.results import NotARun, Run, find_run

FIXTURE = next((FIXTURES / "runs" / "thread_pool").iterdir())


@pytest.fixture
def finished(tmp_path):
    copy = tmp_path / "runs" / "thread_pool" / FIXTURE.name
    shutil.copytree(FIXTURE, copy)
    return copy


def snapshot(run_dir):
    """Every file the run wrote (its variants aside) with its content hash."""
    return {str(f.relative_to(run_dir)): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(run_dir.rglob("*")) if f.is_file() and "variants" not in f.parts}


def test_a_cell_re_analyses_with_the_runs_measurement_and_its_own_analysis_parameters(finished, capsys):
    study = load("thread_pool")
    recorded = Run.open(finished).metadata["parameters"]
    p = checks.resolve_cell(study, {"profile": "quick", "threads": [1], "draw_threshold": 0.02,
                                    "repeats": None, "run_dir": str(finished)})
    said = capsys.readouterr().out
    assert p.threads == recorded["threads"] and p.profile == recorded["profile"] and p.draw_threshold == 0.02
    assert f"Re-analysing run {finished.name} at draw_threshold = 0.02 (the run's: 0.05): a variant" in said
    assert "threads = [1] (the run's: " in said and "profile = 'quick'" in said and "ignored" in said
    assert "repeats" not in said  # None: the cell did not ask for anything
    before = snapshot(finished)
    run = ownership.open_run(study, p, str(finished))
    assert run.variant == "draw_threshold=0.02" and run.figures == finished / "variants" / run.variant / "figures"
    assert run.notebook.parent == run.report.parent == finished / "variants" / run.variant
    assert dict(run.variants())[run.variant] == {"draw_threshold": {"run": recorded["draw_threshold"], "variant": 0.02}}
    assert snapshot(finished) == before
    # at the run's own analysis parameters it is the run itself (its report is rewritten as it was)
    same = checks.resolve_cell(study, {"run_dir": str(finished)})
    assert ownership.open_run(study, same, str(finished)).variant is None


def test_run_dir_is_found_from_the_notebooks_folder_or_the_repository(finished, monkeypatch):
    monkeypatch.chdir(paths.NOTEBOOKS_DIR)  # where the kernel runs
    assert find_run(FIXTURE.relative_to(REPO)) == FIXTURE.resolve()          # as the README writes it
    assert find_run("../" + str(FIXTURE.relative_to(REPO))) == FIXTURE.resolve()  # from notebooks/
    with pytest.raises(NotARun, match="no run there"):
        find_run("data/runs/thread_pool/nothing-here")


@pytest.mark.notebook
def test_dbstudies_report_p_writes_a_variant_beside_the_runs_report(finished):
    before = snapshot(finished)
    bad = subprocess.run([sys.executable, "-m", "dbstudies", "report", str(finished), "-p", "threads", "[1]"],
                         capture_output=True, text=True, cwd=REPO, timeout=60)
    assert bad.returncode == 2 and "threads: a measurement parameter" in bad.stderr
    assert snapshot(finished) == before and not (finished / "variants").exists()
    p = subprocess.run([sys.executable, "-m", "dbstudies", "report", str(finished), "-p", "draw_threshold", "0.02"],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    variant = finished / "variants" / "draw_threshold=0.02"
    html = (variant / "report.html").read_text()
    assert "re-analysis" in html and "draw_threshold 0.02 (the run&#x27;s report: 0.05)" in html
    assert re.search(r"<code>draw_threshold</code></td><td>0.02</td><td>0.05</td><td>changed", html)  # its parameters
    assert list((variant / "figures").glob("*.png")), "the variant's figures"
    assert snapshot(finished) == before, "a re-analysis changed what the run wrote"
    listed = subprocess.run([sys.executable, "-m", "dbstudies", "runs", "--runs-dir", str(finished.parents[1])],
                            capture_output=True, text=True, cwd=REPO, timeout=60).stdout
    assert "re-analysis draw_threshold=0.02: draw_threshold 0.02 (run: 0.05)" in listed
    with pytest.raises(ParamError):  # the cell's analysis parameter is checked like any other
        checks.resolve_cell(load("thread_pool"), {"draw_threshold": 2.0, "run_dir": str(finished)})
