"""`make lab`: JupyterLab's saves of a study notebook go to a working copy, never into the
tracked notebook; deleting the working copy brings the study's own back."""
import asyncio
import shutil

import nbformat
import pytest
from tornado import web

from dbstudies.core import paths
from dbstudies.kernel import lab


@pytest.fixture
def manager(tmp_path):
    root = tmp_path / "notebooks"
    shutil.copytree(paths.NOTEBOOKS_DIR, root)
    return lab.WorkingCopies(root_dir=str(root), working_dir=str(tmp_path / "lab")), root, tmp_path / "lab"


def parameters(nb):
    return next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))


def run(coroutine):
    return asyncio.run(coroutine)


def test_a_saved_study_notebook_goes_to_its_working_copy_and_the_tracked_one_stays(manager):
    cm, root, working = manager
    tracked = (root / "scaling.ipynb").read_bytes()
    model = run(cm.get("scaling.ipynb"))
    nb = model["content"]
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = params.source.replace('profile = "quick"', 'profile = "smoke"')
    code = next(c for c in nb.cells if c.cell_type == "code" and c is not params)
    code.outputs = [nbformat.v4.new_output("stream", text="a run's output\n")]
    code.execution_count = 3
    saved = run(cm.save({"type": "notebook", "content": nb}, "scaling.ipynb"))
    assert saved["path"] == "scaling.ipynb" and saved["name"] == "scaling.ipynb"
    assert (root / "scaling.ipynb").read_bytes() == tracked          # never written
    copy = nbformat.read(working / "scaling.ipynb", as_version=4)
    assert 'profile = "smoke"' in parameters(copy).source
    # JupyterLab reads back what it saved, under the same name, and lists it in notebooks/
    again = run(cm.get("scaling.ipynb"))["content"]
    assert 'profile = "smoke"' in next(c for c in again.cells if "parameters" in c.metadata.get("tags", [])).source
    listed = {m["name"] for m in run(cm.get("", content=True))["content"]}
    assert "scaling.ipynb" in listed
    # a notebook of the user's own is saved where it is, as JupyterLab always does
    run(cm.save({"type": "notebook", "content": nbformat.v4.new_notebook()}, "mine.ipynb"))
    assert (root / "mine.ipynb").exists() and not (working / "mine.ipynb").exists()
    # deleting the study notebook deletes its working copy: the study's own is back
    run(cm.delete_file("scaling.ipynb"))
    assert not (working / "scaling.ipynb").exists() and (root / "scaling.ipynb").read_bytes() == tracked
    assert 'profile = "quick"' in parameters(run(cm.get("scaling.ipynb"))["content"]).source
    with pytest.raises(web.HTTPError) as e:  # … and the tracked one cannot be deleted or renamed
        run(cm.delete_file("scaling.ipynb"))
    assert e.value.status_code == 403 and (root / "scaling.ipynb").exists()
    with pytest.raises(web.HTTPError):
        run(cm.rename_file("scaling.ipynb", "tp.ipynb"))


def test_opening_a_study_notebook_without_changing_a_cell_makes_no_working_copy(manager):
    cm, root, working = manager
    nb = run(cm.get("scaling.ipynb"))["content"]
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.2"}  # what the kernel fills in
    for c in nb.cells:
        c.metadata["trusted"] = True
    saved = run(cm.save({"type": "notebook", "content": nb}, "scaling.ipynb"))  # an autosave
    assert not working.exists() or not list(working.iterdir()), "a working copy of an unchanged notebook"
    assert saved["last_modified"] == run(cm.get("scaling.ipynb", content=False))["last_modified"]
    parameters(nb).source += "\nthreads = [1]"  # the first change makes it
    run(cm.save({"type": "notebook", "content": nb}, "scaling.ipynb"))
    assert "threads = [1]" in parameters(nbformat.read(working / "scaling.ipynb", as_version=4)).source


def test_a_working_copy_says_when_its_study_notebook_changed_since_and_the_way_back(manager):
    cm, root, working = manager
    nb = run(cm.get("scaling.ipynb"))["content"]
    parameters(nb).source += "\nthreads = [1]"
    run(cm.save({"type": "notebook", "content": nb}, "scaling.ipynb"))
    assert lab.NOTICE not in str(run(cm.get("scaling.ipynb"))["content"].cells[0].metadata)  # not behind yet
    study = nbformat.read(root / "scaling.ipynb", as_version=4)  # a `git pull` changes the study's notebook
    study.cells[0].source += "\nA new sentence."
    nbformat.write(study, root / "scaling.ipynb")
    shown = run(cm.get("scaling.ipynb"))["content"]
    assert lab.NOTICE in shown.cells[0].metadata["tags"] and "has changed since" in shown.cells[0].source
    assert "delete this notebook in the file browser" in shown.cells[0].source
    assert "threads = [1]" in parameters(shown).source and shown.cells[1].cell_type == "markdown"  # the copy, below
    run(cm.save({"type": "notebook", "content": shown}, "scaling.ipynb"))  # the notice is never saved
    assert lab.NOTICE not in (working / "scaling.ipynb").read_text()
    run(cm.delete_file("scaling.ipynb"))  # the way back: the study's notebook, with its change
    assert "A new sentence." in run(cm.get("scaling.ipynb"))["content"].cells[0].source
    assert not list(working.iterdir())


def test_make_lab_runs_jupyterlab_with_the_working_copies():
    args = lab.argv(port=8899, token="t")
    assert "--ServerApp.contents_manager_class=dbstudies.lab.WorkingCopies" in args
    assert f"--notebook-dir={paths.NOTEBOOKS_DIR}" in args and "--port=8899" in args
    assert "dbstudies lab" in (paths.REPO / "Makefile").read_text()
