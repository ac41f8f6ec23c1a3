"""`make lab`: JupyterLab's saves of a study notebook go to a working copy, never into the
tracked notebook; deleting the working copy brings the study's own back."""
import asyncio
import shutil

import nbformat
import pytest
from tornado import web

from dbstudies import lab, paths


@pytest.fixture
def manager(tmp_path):
    root = tmp_path / "notebooks"
    shutil.copytree(paths.NOTEBOOKS_DIR, root)
    return lab.WorkingCopies(root_dir=str(root), working_dir=str(tmp_path / "lab")), root, tmp_path / "lab"


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
    assert 'profile = "smoke"' in copy.cells[1].source
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
    assert 'profile = "quick"' in run(cm.get("scaling.ipynb"))["content"].cells[1].source
    with pytest.raises(web.HTTPError) as e:  # … and the tracked one cannot be deleted or renamed
        run(cm.delete_file("scaling.ipynb"))
    assert e.value.status_code == 403 and (root / "scaling.ipynb").exists()
    with pytest.raises(web.HTTPError):
        run(cm.rename_file("scaling.ipynb", "tp.ipynb"))


def test_make_lab_runs_jupyterlab_with_the_working_copies():
    args = lab.argv(port=8899, token="t")
    assert "--ServerApp.contents_manager_class=dbstudies.lab.WorkingCopies" in args
    assert f"--notebook-dir={paths.NOTEBOOKS_DIR}" in args and "--port=8899" in args
    assert "dbstudies lab" in (paths.REPO / "Makefile").read_text()
