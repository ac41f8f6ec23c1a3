"""Every notebook: narrative and calls only, a complete parameters cell, and one execution
in the suite (through the CLI, shared with test_study.py) whose deterministic cells — those
marked `# CHECK_OUTPUT` — print what tests/fixtures/notebook_outputs.json records."""
import ast
import json
import subprocess
import sys

import checked_cells
import nbformat
import pytest
from conftest import FIXTURES, NOTEBOOKS, SMOKE_ORDER, SMOKE_RUNS, STUDIES

from dbstudies.core import paths
from dbstudies.kit import study as registry
from dbstudies.store.params import fields
from dbstudies.store.results import Run
from dbstudies.workflows import generated
from dbstudies.workflows.runner import default_kernel

CHECK = "# CHECK_OUTPUT"
EXPECTED = json.loads((FIXTURES / "notebook_outputs.json").read_text())


def code_cells(name):
    nb = nbformat.read(paths.NOTEBOOKS_DIR / name, as_version=4)
    return [c for c in nb.cells if c.cell_type == "code"]


def face(name: str) -> str:
    """The study a notebook's parameters cell names first (a shared notebook's first face)."""
    return registry.faces(paths.NOTEBOOKS_DIR / name)[0]


def test_every_notebook_is_covered():
    assert NOTEBOOKS, "no notebooks found"
    assert set(SMOKE_RUNS) <= set(STUDIES) and set(EXPECTED) == set(STUDIES), \
        "record a new study's checked outputs in fixtures/notebook_outputs.json"
    # a notebook per study, but the faces of one experiment share theirs
    assert {registry.notebook_of(registry.load(s)).name for s in STUDIES} == set(NOTEBOOKS)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_a_tracked_notebook_holds_no_outputs(name):
    """What a run shows belongs to its run directory (and JupyterLab saves into working
    copies: `dbstudies.kernel.lab`), never to the study notebook in git."""
    held = [(i, c.execution_count, len(c.outputs)) for i, c in enumerate(code_cells(name))
            if c.outputs or c.execution_count is not None]
    assert not held, f"{name}: code cells (index, execution count, outputs) that hold a run's output: {held}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_holds_no_definitions_and_a_complete_parameters_cell(name):
    cells = code_cells(name)
    for c in cells:
        tree = ast.parse(c.source)
        assert not [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef,
                                                                 ast.AsyncFunctionDef, ast.Lambda))], c.source
    (params,) = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    declared = {t.id for n in ast.parse(params.source).body for t in n.targets}
    study = registry.load(face(name))
    shared = ["face"] if study.NOTEBOOK else []
    assert declared == {*shared, "profile", *fields(study.Params), "run_dir", "runs_root"}
    # generated from the fields and their meanings: a parameter added, renamed or re-worded in
    # its class and not written into the notebook fails here (`dbstudies list --write-readme`)
    assert params.source == generated.parameters_cell(study), "the parameters cell drifted: run `dbstudies list --write-readme`"
    # … and papermill, which injects the CLI's values, reads every one of them (a line it cannot
    # parse — two `=` — makes it warn "Passed unknown parameter" on every run)
    from papermill.translators import PythonTranslator
    assert [x.name for x in PythonTranslator.inspect(params)] == [
        n for n in ast.parse(params.source).body for n in [n.targets[0].id]]
    calls = [n for c in cells for n in ast.walk(ast.parse(c.source))
             if isinstance(n, ast.Call) and getattr(n.func, "attr", "").startswith("resolve")]
    (call,) = calls  # the parameters cell handed over whole: no parameter is named twice
    assert call.func.attr == "resolve_cell" and ast.unparse(call.args[1]) == "globals()"
    assert not call.keywords
    # … so no other cell may bind a parameter's name (a loop's `threads` would be taken for
    # the parameter when the cell is run again in JupyterLab)
    bound = {n.id for c in cells if c is not params for n in ast.walk(ast.parse(c.source))
             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    bound |= {a.asname or a.name.split(".")[0] for c in cells for n in ast.walk(ast.parse(c.source))
              if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    assert not bound & set(fields(study.Params)), bound & set(fields(study.Params))
    # … and every notebook shows its study's answer the same way (the study's `answer`)
    sources = [c.source for c in cells]
    assert sum("answer = study.answer(run, params)" in s for s in sources) == 1
    assert sum("report.answer(answer, run=run)" in s for s in sources) == 1
    assert callable(getattr(study, "answer", None))


def test_the_scaling_experiments_two_faces_say_it_once():
    """thread_pool and versions are two faces of one experiment (`studies.scaling`): each
    face's module takes its parameters, arms and analysis from there (it adds profiles, words
    and its narrative), and both run one notebook, notebooks/scaling.ipynb, which loads the
    face its parameters cell names and shows that face's own words."""
    from dbstudies.studies import scaling
    faces = [registry.load("thread_pool"), registry.load("versions")]
    for f in faces:
        assert issubclass(f.Params, scaling.Params) and fields(f.Params) == fields(scaling.Params)
        assert not [n for n, v in vars(f.Params).items() if callable(v) and not n.startswith("__")]
        for name in ("arms", "relative", "relative_layout", "summary", "conclusion", "claims", "answer",
                     "profile_cells", "qps_table"):
            assert getattr(type(f), name) is getattr(scaling.Scaling, name), (type(f).__name__, name)
        assert isinstance(f, scaling.Scaling)
        assert set(vars(type(f))) - {"__module__", "__doc__", "__qualname__", "__parameters__"} <= {"Params", "PROFILES", "GOVERNING",
                                                                                  "NARRATIVE"}
        assert registry.notebook_of(f) == paths.NOTEBOOKS_DIR / "scaling.ipynb"
        assert set(f.NARRATIVE) == {"intro", "method"} and f.NARRATIVE["intro"].startswith("# ")
    assert registry.faces(paths.NOTEBOOKS_DIR / "scaling.ipynb") == ["thread_pool", "versions"]
    code = [c.source for c in code_cells("scaling.ipynb")]
    assert any("load(face)" in c for c in code) and {'report.narrative(study, "intro")',
                                                     'report.narrative(study, "method")'} <= set(code)


@pytest.mark.notebook
@pytest.mark.server
@pytest.mark.parametrize("name", SMOKE_ORDER)
def test_notebook_smoke_run_has_no_errors_and_its_checked_cells_match(name, smoke_run):
    proc, run_dir = smoke_run(name)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = Run.open(run_dir)
    assert run.status == "complete" and run.metadata["parameters"]["profile"] == "smoke"
    assert len(list((run.path / "figures").glob("*.png"))) >= 3
    nb = nbformat.read(run.path / "notebook.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    checked = ["".join(o.get("text", "") for o in c.outputs if o.output_type == "stream")
               for c in code if c.source.startswith(CHECK)]
    assert checked == EXPECTED[name]


@pytest.mark.notebook
@pytest.mark.server
@pytest.mark.parametrize("name", STUDIES)
def test_smoke_figures_are_readable_and_keep_one_colour_per_arm(name, smoke_run):
    """Every figure of every study's smoke run, as matplotlib drew it (figures/<name>.json,
    written by plots.save): ≥ 3 labelled ticks and a unit on each numeric axis, a legend for
    several series, no data point beyond the axes unmarked, no marker cut by the frame; and a
    label has one colour in all of the run's figures."""
    proc, run_dir = smoke_run(name)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = sorted((run_dir / "figures").glob("*.json"))
    assert len(figures) >= 3 and len(figures) == len(list((run_dir / "figures").glob("*.png")))
    colours: dict[str, set] = {}
    for f in figures:
        props = json.loads(f.read_text())
        assert props["problems"] == [], (f.name, props["problems"])
        assert props["panels"] and all(p["yticks"] for p in props["panels"]), f.name
        for label, colour in props["colours"].items():
            colours.setdefault(label, set()).add(colour)
    assert {k: v for k, v in colours.items() if len(v) > 1} == {}
    # the baseline (the first arm) has the palette's first colour wherever it appears
    baseline = Run.open(run_dir).metadata["arms"][0]["label"]
    mine = set().union(*(v for label, v in colours.items() if label.split(", ")[0] == baseline))
    assert mine == {"#4c72b0"}, (baseline, colours)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_a_notebooks_checked_cells_are_those_of_its_text_reference(name):
    """tests/nbval/<notebook>.txt holds what the notebook's checked cells print on its (first
    face's) fixture run (nbval compares them, tests/checked_cells.py); a notebook whose checked
    cells changed without the reference being written again fails here, before any kernel
    starts — and the notebook nbval executes is the study's, cell for cell, plus the fixture's parameters."""
    study = name.removesuffix(".ipynb")
    built = nbformat.read(checked_cells.build(face(name)), as_version=4)
    code = [c for c in built.cells if c.cell_type == "code"]
    injected = [c for c in code if checked_cells.INJECTED in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "run_dir = '../fixtures/runs/" in injected[0].source
    assert [c.source for c in code if c not in injected] == [c.source for c in code_cells(name)], (
        f"tests/nbval/{study}.txt is stale: {checked_cells.REBUILD}")
    checked = checked_cells.checked_cells(built)
    assert len(checked) >= 4 and all(c.outputs for c in checked)
    text = (checked_cells.NBVAL / f"{study}.txt").read_text()
    assert checked_cells.to_text(built) == text  # read back as written: nothing lost between the two
    assert "<td" not in text and "<svg" not in text and " at 0x" not in text.replace("at 0xADDRESS", "")


def test_no_committed_notebook_under_tests_holds_outputs():
    """A notebook change shows as a text diff of its checked cells, never as outputs in JSON."""
    listed = subprocess.run(["git", "ls-files", "tests"], capture_output=True, text=True, cwd=paths.REPO,
                            check=True).stdout.split()
    with_outputs = [f for f in listed if f.endswith(".ipynb") and any(
        c.get("outputs") for c in nbformat.read(paths.REPO / f, as_version=4).cells)]
    assert [f for f in listed if f.endswith(".txt") and f.startswith("tests/nbval/")] and with_outputs == []


def test_dbstudies_kernel_runs_this_venvs_python():
    """`make lab` and papermill use the kernel `dbstudies`: it must be the venv's Python."""
    from pathlib import Path

    from jupyter_client.kernelspec import KernelSpecManager
    spec = KernelSpecManager().get_kernel_spec("dbstudies")
    assert Path(spec.argv[0]).resolve() == Path(sys.executable).resolve()
    assert default_kernel() == "dbstudies"
    nb = nbformat.read(paths.NOTEBOOKS_DIR / NOTEBOOKS[0], as_version=4)
    assert nb.metadata.kernelspec.name == "dbstudies"
