"""A study of your own, outside the repository (docs/writing-a-study.md): the folder of
tests/fixtures/outside_study — its module and its notebook — copied to a temporary folder and
measured, planned, listed and reported through the CLI like a built-in study."""
from __future__ import annotations

import inspect
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from report_checks import report_problems

from dbstudies.core import paths
from dbstudies.core.errors import ParamError
from dbstudies.kit import study
from dbstudies.kit.study import load, names

FIXTURE = Path(__file__).parent / "fixtures" / "outside_study"
CLI = [sys.executable, "-m", "dbstudies"]


def cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=600, cwd=cwd)


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    """The study copied outside the repository, and the one run its smoke profile made there
    as a sweep of one job (seed 2) — measured to a precision target through the shared skeleton
    (3 first rounds, then rounds while a cell is short of it, within a 1-minute budget).
    Returns the folder, the run, what `dbstudies run` printed (the sweep keeps it beside the
    run) and what the sweep printed."""
    home = tmp_path_factory.mktemp("home")
    assert not home.is_relative_to(paths.REPO)
    shutil.copytree(FIXTURE, home / "outside_study", ignore=shutil.ignore_patterns("__pycache__"))
    (home / "grid.yaml").write_text(json.dumps({
        "profile": "smoke", "parameters": {"repeats": 3, "budget": 1, "target": {"qps": 0.9, "p95": 0.9}},
        "grid": {"seed": [2]}}))
    p = cli("sweep", "./outside_study", "--grid", "grid.yaml", "--runs-dir", "runs", "--sweeps-dir", "sweeps",
            cwd=home)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    (run,) = (home / "runs" / "outside_study").iterdir()
    return home, run, (run / "sweep.log").read_text(), p.stdout


@pytest.mark.notebook
@pytest.mark.server
def test_a_study_of_your_own_runs_from_its_folder_with_paired_verdicts(outside):
    home, run, out, _ = outside
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "complete" and meta["study"] == "outside_study"
    assert meta["study_dir"] == str(home / "outside_study")
    assert [a["label"] for a in meta["arms"]] == ["redo 1G", "redo 16M"] and meta["design"] == "paired"
    assert "against redo 1G: redo 16M " in out and "**" not in out  # the lead words, printed in plain text
    assert (run / "report.html").stat().st_size > 0 and (run / "figures" / "qps_vs_threads.png").exists()
    assert report_problems((run / "report.html").read_text()) == []  # a researcher's report is held to ours
    aimed = meta["precision"]  # the rounds to the target: what the loop decided, kept in the run
    assert aimed["target"] == {"qps": 0.9, "p95": 0.9} and aimed["first_rounds"] == 3
    assert aimed["stopped"] in ("every cell met its target", "1 cell short of the target needs more rounds "
                                "than the budget has left")
    (cell,) = aimed["cells"]
    assert cell["cell"] == ["oltp_read_write", 2] and cell["pairs"] >= 3 and set(cell["mde_pct"]) == {"qps", "p95"}
    assert (cell["more"] == 0) == (max(cell["mde_pct"].values()) <= 90)
    assert "then rounds only for the cells still above their target (QPS 90 %, p95 90 %" in (run / "report.html").read_text()


@pytest.mark.notebook
@pytest.mark.server
def test_plan_runs_and_report_take_the_folder_too(outside):
    home, run, _, _ = outside
    listed = cli("runs", "./outside_study", "--runs-dir", "runs", cwd=home)
    assert listed.returncode == 0 and run.name in listed.stdout, listed.stderr
    planned = cli("plan", "./outside_study", "--profile", "smoke", "--no-pilot", "--runs-dir", "runs", cwd=home)
    assert planned.returncode == 0, planned.stderr
    assert "outside_study (smoke): paired design, 2 rounds × 1 cells × 2 arms (redo 1G, redo 16M)" in planned.stdout
    assert re.search(r"from the noise of \d earlier paired run\(s\) of outside_study", planned.stdout)
    aimed = cli("plan", "./outside_study", "--profile", "smoke", "--no-pilot", "--runs-dir", "runs", "-p", "repeats", "3",
                "-p", "budget", "1", "-p", "target", '{"qps": 0.5}', cwd=home)
    assert aimed.returncode == 0 and "to the target (QPS 50 %): about " in aimed.stdout, aimed.stderr
    (run / "report.html").unlink()
    again = cli("report", "--analyse", str(run), cwd=paths.REPO)  # loaded again from study_dir
    assert again.returncode == 0 and (run / "report.html").exists(), again.stderr[-2000:]


def test_a_folder_that_is_not_a_study_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ParamError, match="not a study's folder"):
        load(tmp_path / "empty")
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "__init__.py").write_text('"""No parameters."""\n')
    with pytest.raises(ParamError, match="declares no STUDY"):
        load(tmp_path / "half")
    (tmp_path / "half" / "__init__.py").write_text(
        '"""No answer."""\nfrom dbstudies.measure.steps import SysbenchStudy\nfrom dbstudies.kit.studykit import SysbenchParams\n'
        'class Half(SysbenchStudy):\n    Params, PROFILES = SysbenchParams, {}\n    def arms(self, p):\n        return []\n'
        'STUDY = Half()\n')
    with pytest.raises(ParamError, match="declares no answer"):
        load(tmp_path / "half")
    # a hook written as a module function and never made the class's would silently run the
    # kind's default: refused when the study loads, naming the method it should be
    (tmp_path / "forgot").mkdir()
    (tmp_path / "forgot" / "__init__.py").write_text(
        '"""A forgotten hook."""\nfrom dbstudies.measure.steps import SysbenchStudy\nfrom dbstudies.kit.studykit import SysbenchParams\n'
        'def describe(p, steps):\n    return "mine"\n'
        'class Forgot(SysbenchStudy):\n    Params, PROFILES = SysbenchParams, {}\n    def arms(self, p):\n        return []\n'
        '    def answer(self, run, p):\n        return None\n'
        'STUDY = Forgot()\n')
    with pytest.raises(ParamError, match=r"defines describe\(\) as a module function.*Forgot\.describe"):
        load(tmp_path / "forgot")


def test_a_study_is_its_class():
    """Every built-in study's hooks are its class's methods (no module function named like one),
    and nothing but what its class declares is reached through it."""
    for name in names():
        s = load(name)
        module_hooks = [h for h in study.HOOKS if inspect.isfunction(getattr(s.module, h, None))]
        assert module_hooks == [], (name, module_hooks)
        undeclared = [n for n in vars(s.module) if not n.startswith("_") and not hasattr(type(s), n)]
        assert undeclared and not any(hasattr(s, n) for n in undeclared), name  # no fallback to its module
    assert hasattr(load("checkpoint_stalls").module, "WORKLOADS") and not hasattr(load("checkpoint_stalls"), "WORKLOADS")


def test_built_in_studies_are_found_not_listed():
    """A package in studies/ is a study: nothing registers it by hand."""
    found = sorted(p.parent.name for p in paths.STUDIES_DIR.glob("*/__init__.py"))
    assert names() == found and "thread_pool" in found
    assert load("thread_pool").module.__name__ == "dbstudies.studies.thread_pool"


def test_its_parameters_cell_names_every_parameter_once():
    import ast

    import nbformat

    from dbstudies.store.params import fields
    nb = nbformat.read(FIXTURE / "outside_study.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    declared = [t.id for n in ast.parse(cell.source).body for t in n.targets]
    assert sorted(declared) == sorted({"profile", *fields(load(FIXTURE).Params), "run_dir", "runs_root"})


@pytest.mark.notebook
@pytest.mark.server
def test_a_sweep_takes_the_folder_too(outside):
    home, run, _, said = outside
    assert re.search(r"complete: outside_study \(smoke\): .*seed=2", said), said
    (index,) = (home / "sweeps").glob("*/index.html")
    assert re.search(r"outside_study \(smoke\): .*seed=2", index.read_text())
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "complete" and meta["parameters"]["seed"] == 2
    assert meta["study_dir"] == str(home / "outside_study")

