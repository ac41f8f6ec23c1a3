"""Every notebook runs end to end (smoke profile) through papermill, then nbval --nbval-lax
re-executes the executed copy and checks the cells marked NBVAL_CHECK_OUTPUT."""
import ast
import json
import subprocess
import sys

import nbformat
import papermill as pm
import pytest

from dbstudies import paths
from dbstudies.cli import default_kernel
from dbstudies.params import fields
from dbstudies.results import Run
from dbstudies.studies import STUDIES

# notebook → the parameters that make it a smoke run; a new notebook must be added here
COVERED = {"thread_pool.ipynb": {"profile": "smoke"}}
NOTEBOOKS = sorted(p.name for p in paths.NOTEBOOKS_DIR.glob("*.ipynb"))


def code_cells(name):
    nb = nbformat.read(paths.NOTEBOOKS_DIR / name, as_version=4)
    return [c for c in nb.cells if c.cell_type == "code"]


def test_every_notebook_is_covered():
    assert NOTEBOOKS, "no notebooks found"
    assert set(NOTEBOOKS) == set(COVERED), "add new notebooks to COVERED (and remove deleted ones)"
    assert set(NOTEBOOKS) == {f"{s}.ipynb" for s in STUDIES}, "one notebook per study module"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_holds_no_definitions_and_a_complete_parameters_cell(name):
    cells = code_cells(name)
    for c in cells:
        tree = ast.parse(c.source)
        assert not [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef,
                                                                 ast.AsyncFunctionDef, ast.Lambda))], c.source
    (params,) = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    declared = {t.id for n in ast.parse(params.source).body for t in n.targets}
    study = STUDIES[name.removesuffix(".ipynb")]
    assert declared == {"profile", *fields(study.Params), "run_dir", "runs_root"}
    resolve_calls = [n for c in cells for n in ast.walk(ast.parse(c.source))
                     if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "resolve"]
    (call,) = resolve_calls
    assert {k.arg for k in call.keywords} == set(fields(study.Params))  # every parameter is passed on


@pytest.mark.notebook
@pytest.mark.server
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_with_smoke_profile_and_passes_nbval(name, tmp_path):
    executed = tmp_path / name
    runs = tmp_path / "runs"
    pm.execute_notebook(paths.NOTEBOOKS_DIR / name, executed,
                        parameters={**COVERED[name], "runs_root": str(runs)},
                        kernel_name=default_kernel(), cwd=str(paths.NOTEBOOKS_DIR), progress_bar=False)
    (meta,) = runs.glob("*/*/metadata.json")
    run = Run.open(meta.parent)
    assert run.status == "complete" and run.metadata["parameters"]["profile"] == "smoke"
    assert len(list((run.path / "figures").glob("*.png"))) >= 3
    nb = json.loads(executed.read_text())
    assert not [o for c in nb["cells"] for o in c.get("outputs", []) if o["output_type"] == "error"]
    p = subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "-p", "no:cacheprovider", "-q",
                        str(executed)], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-4000:]
    assert " passed" in p.stdout and "failed" not in p.stdout
    assert len(list(runs.glob("*/*/metadata.json"))) == 2  # nbval really re-ran the study


def test_dbstudies_kernel_runs_this_venvs_python():
    """`make lab` and papermill use the kernel `dbstudies`: it must be the venv's Python."""
    from pathlib import Path

    from jupyter_client.kernelspec import KernelSpecManager
    spec = KernelSpecManager().get_kernel_spec("dbstudies")
    assert Path(spec.argv[0]).resolve() == Path(sys.executable).resolve()
    assert default_kernel() == "dbstudies"
    nb = nbformat.read(paths.NOTEBOOKS_DIR / NOTEBOOKS[0], as_version=4)
    assert nb.metadata.kernelspec.name == "dbstudies"
