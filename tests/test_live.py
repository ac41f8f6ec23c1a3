"""A notebook run by hand: our errors in one line (a real kernel), the progress line."""
import re

import nbformat
import pytest
from nbclient import NotebookClient

from dbstudies.kernel import live
from dbstudies.measure.loop import Loop
from dbstudies.workflows.runner import default_kernel


@pytest.mark.notebook
def test_a_bad_parameter_is_one_line_in_a_live_kernel_and_tb_shows_the_rest(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('from dbstudies.kit.study import load\nfrom dbstudies.measure import checks\n'
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


@pytest.mark.notebook
def test_a_pass_forgets_the_results_of_the_one_before_and_a_cell_using_one_stops_in_one_line(tmp_path):
    """A good pass, then a bad parameter: the first pass's parameters and tables are gone —
    a later cell using them stops with one line, it never shows the old numbers; the study and
    the parameters themselves stay. The cells come one at a time (nbclient): none is aborted."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('import pandas as pd\nfrom dbstudies.kit.study import load\nfrom dbstudies.measure import checks\n'
                                  'study = load("thread_pool")\nprofile = "smoke"'),
        nbformat.v4.new_code_cell("params = checks.resolve_cell(study, globals())\nsummary = pd.DataFrame({'qps': [1.0]})"),
        nbformat.v4.new_code_cell('profile = "fast"\nparams = checks.resolve_cell(study, globals())'),
        nbformat.v4.new_code_cell("summary['qps'].sum()"),
        nbformat.v4.new_code_cell("print(type(study).__name__, profile, repr(params))")])
    NotebookClient(nb, kernel_name=default_kernel(), allow_errors=True, timeout=120,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert [o.output_type for o in nb.cells[1].outputs] == []  # the first pass: fine
    assert "unknown profile 'fast'" in nb.cells[2].outputs[-1].traceback[0]
    (stale,) = [o for o in nb.cells[3].outputs if o.output_type == "error"]
    assert len(stale.traceback) == 1 and "summary belongs to an earlier pass of this notebook" in stale.traceback[0]
    assert nb.cells[4].outputs[0].text.strip() == "ThreadPool fast <params: from an earlier pass, forgotten>"


def test_progress_says_the_step_steps_done_elapsed_and_remaining():
    assert live.progress_text(3, 10, "r1 pool oltp 8", 30, live.time_left(3, 10, 30, None)) == \
        "Measuring step 4 of 10 — r1 pool oltp 8 · 30 s elapsed, about 1 min 10 s left"
    assert "remaining time known after the first step" in live.progress_text(0, 10, "", 1, None)
    js = live.banner("Measuring step 1 of 2", "progress").data
    assert live.BANNER in js and "position:fixed" in js and "Measuring step 1 of 2" in js
    assert "remove()" in live.banner(None).data
    # a cell drawn anew runs its old panel script again: only the newest script changes the panel
    older, newer = (int(re.search(r"var s = (\d+);", live.banner(t).data).group(1)) for t in ("a", "b"))
    assert newer > older and "(window._dbsPanel || 0) < s" in live.banner("c").data
    # the panel's clock ticks both times in the browser, from the values the line says
    ticking = live.banner(live.progress_text(3, 10, "r1", 80, 200), "progress", tick=(80, 200)).data
    assert '<span class=\\"dbs-elapsed\\">1 min 20 s</span> elapsed' in ticking
    assert '<span class=\\"dbs-left\\">3 min 20 s</span> left' in ticking and "setInterval" in ticking


def test_the_terminal_bar_never_shows_a_smaller_fraction_when_rounds_are_added():
    """`make study`'s bar over what a run with a target writes: its first rounds (a fixed
    total), then the target loop adding rounds as it goes (81 % read 79 %, then 78 %, before)."""
    import io

    from dbstudies.workflows.runner import ProgressBar
    written = [(0, 48), (20, 48), (40, 48), (48, 48), (48, 56), (50, 56), (52, 60), (56, 60), (60, 66), (66, 66)]
    out = io.StringIO()
    bar = ProgressBar("thread_pool", out, mininterval=0)
    for done, total in written:
        bar.show({"done": done, "total": total, "now": f"r{done // 4} pool · to the target: 3 cells short"})
    bar.close()
    shown = [int(x) for x in re.findall(r"(\d+)%\|", out.getvalue())]
    assert shown and shown == sorted(shown) and shown[-1] == 100  # the plan's rounds, as a fraction
    assert "66step" in out.getvalue().replace(" ", "") and "to the target: 3 cells short" in out.getvalue()
    # the notebook panel's line: the same rule (no "of N" once the total grew)
    t = live.Tally()
    said = [live.progress_text(d, t.shown(d, n), "", 60, None) for d, n in written]
    assert said[2].startswith("Measuring step 41 of 48") and said[4] == "Measuring step 49 · 1 min elapsed"
    assert all(" of " not in line for line in said[4:])


def test_time_left_leans_on_the_plan_early_and_on_the_pace_later():
    # a slow first step (servers starting) moves the estimate less than the raw pace would
    raw, steadied = live.time_left(1, 64, 30, None), live.time_left(1, 64, 30, 5.0)
    assert raw == 30 * 63 and steadied < raw / 2
    # later the pace decides: 40 steps at 10 s each against a plan of 5 s
    assert abs(live.time_left(40, 64, 400, 5.0) - 24 * (5 * 5 + 400) / 45) < 1e-9


def test_progress_through_a_paired_runs_updates_counts_up_and_names_the_step_that_runs(tmp_path, monkeypatch, capsys):
    """The loop's real pair (sysbench's, a busy host measured again) with sysbench and the
    store left out: at each sysbench start the display names that step, and its numbers
    never go back."""
    from tqdm import tqdm

    from dbstudies.kit.study import load
    from dbstudies.kit.studykit import arms_of
    from dbstudies.measure import checks, steps
    from dbstudies.measure.context import Context
    from dbstudies.store.results import Run
    study = load("thread_pool")
    p = checks.resolve(study, "smoke", busy_retries=1)
    arms = {a.label: a for a in arms_of(study, p)}
    import IPython.display

    class Handle:  # what a live kernel's display returns: the panel and the cell redrawn in place
        def update(self, obj):
            self.last = obj
    monkeypatch.setattr(IPython.display, "display", lambda obj, display_id=None: Handle())
    run = Run.create("thread_pool", {}, root=tmp_path)
    shown = live.Progress(run, 8, planned=40)
    run.watch_progress(shown.update)
    seen, lines, attempts = [], [], iter([True, False, False, False, False, False])  # the first pair's first try: busy

    class Tried:
        def __init__(self):
            self.busy = next(attempts)

    def attempt(ctx, cell):
        seen.append((ctx.arm.label, shown.state[0], shown._line()))
        return Tried()
    monkeypatch.setattr(steps, "sysbench_attempt", attempt)
    monkeypatch.setattr(steps, "keep", lambda *a, **k: None)
    monkeypatch.setattr(run, "set_progress", lambda d, t, n="": (lines.append(d), shown.update(d, t, n)))
    loop = Loop(study, p, run)
    contexts = {label: Context(p, run, None, None, warmups=[0]) for label in arms}
    done = 0
    for repeat in (1, 2):
        cells = [{"step": done + i, "repeat": repeat, "arm": label, "workload": "oltp_read_only", "threads": 8}
                 for i, label in enumerate(arms)]
        done = loop.pair(contexts, arms, cells, repeat, done, 8, tqdm(disable=True))
    assert lines == sorted(lines), f"the step number went back: {lines}"
    first, second = list(arms)
    assert [(label, n) for label, n, _ in seen] == [(first, 0), (second, 1), (first, 1), (second, 1), (first, 2), (second, 3)]
    for label, n, line in seen:  # the line names the step that runs, with its number
        assert line.startswith(f"Measuring step {n + 1} of 8 — r") and f" {label} oltp_read_only 8" in line, line
    assert "(again: the host was busy)" in seen[2][2]
    # every update came within milliseconds of the last: the panel still shows the last one
    assert "Measuring step 4 of 8" in shown.panel.last.data and f"r2 {second} oltp_read_only 8" in shown.panel.last.data


def test_a_long_run_shows_its_last_stored_steps_throughput_second_by_second(tmp_path, monkeypatch):
    import IPython.display
    import pandas as pd

    from dbstudies.store.results import Run
    from dbstudies.store.tables import INTERVALS

    class Handle:
        def update(self, obj):
            self.last = obj
    monkeypatch.setattr(IPython.display, "display", lambda obj, display_id=None: Handle())
    run = Run.create("thread_pool", {}, root=tmp_path)
    short, long = live.Progress(run, 100, planned=600), live.Progress(run, 100, planned=4 * 3600)
    rows = pd.DataFrame({c: [0] * 3 for c in INTERVALS.columns})
    run.append(INTERVALS, rows.assign(step=7, second=[1, 2, 3], qps=[900.0, 1100.0, 1000.0]))
    for shown in (short, long):
        shown.update(8, 100, "r2 pool-of-threads oltp_read_only 64")
    assert "<svg" not in short.cell.last.data  # a quick run keeps to its line
    assert "the last stored step (7)" in long.cell.last.data and "900–1,100 QPS" in long.cell.last.data
