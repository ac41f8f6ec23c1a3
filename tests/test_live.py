"""A notebook run by hand: our errors in one line (a real kernel), the progress line."""
import nbformat
import pytest
from nbclient import NotebookClient

from dbstudies import live
from dbstudies.runner import default_kernel


@pytest.mark.notebook
def test_a_bad_parameter_is_one_line_in_a_live_kernel_and_tb_shows_the_rest(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('from dbstudies import checks\nfrom dbstudies.study import load\n'
                                  'profile = "fast"\nthreads = [0]'),
        nbformat.v4.new_code_cell('params = checks.resolve_cell(load("thread_pool"), globals())'),
        nbformat.v4.new_code_cell("%tb"),
        nbformat.v4.new_code_cell('assert False, "a bug keeps its whole traceback"')])
    NotebookClient(nb, kernel_name=default_kernel(), allow_errors=True, timeout=120,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    (error,) = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    assert len(error.traceback) == 1 and "%tb shows the traceback" in error.traceback[0]
    assert "Stopped: ParamError: invalid parameters:" in error.traceback[0]
    assert "profile: unknown profile 'fast'" in error.traceback[0]
    # the panel at the bottom of the window says where it stopped
    panel = [o for o in nb.cells[1].outputs if "application/javascript" in o.get("data", {})]
    assert panel and "Stopped: ParamError" in panel[0].data["application/javascript"]
    (whole,) = [o for o in nb.cells[2].outputs if o.output_type == "error"]       # %tb
    assert len(whole.traceback) > 3 and "resolve_cell" in "".join(whole.traceback)
    (bug,) = [o for o in nb.cells[3].outputs if o.output_type == "error"]
    assert len(bug.traceback) > 1  # not ours: the whole traceback


def test_progress_says_the_step_steps_done_elapsed_and_remaining():
    assert live.progress_text(3, 10, "r1 pool oltp 8", 30, None) == \
        "Measuring step 4 of 10 — r1 pool oltp 8 · 30 s elapsed, about 1 min 10 s left"
    assert "remaining time known after the first step" in live.progress_text(0, 10, "", 1, None)
    js = live.banner("Measuring step 1 of 2", "progress").data
    assert live.BANNER in js and "position:fixed" in js and "Measuring step 1 of 2" in js
    assert "remove()" in live.banner(None).data
