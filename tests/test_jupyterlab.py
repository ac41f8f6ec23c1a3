"""The thread-pool notebook in JupyterLab, driven by a real browser (Playwright with the
system Chromium; no browser is downloaded): opening it makes no working copy; a bad parameter
stops Run All in one line; Run All shows its progress where the window is without scrolling,
the results come inline, and the run ends — and the notebook opens — on its answer at a
glance; changing only an analysis parameter re-analyses the kernel's run and measures nothing,
at the run's own parameters writing nothing; an interrupt mid-measurement is one line, the run
marked interrupted; a bad parameter right after an interrupt stops Run All at the check, ten
times out of ten; a study notebook changed since its working copy was made is announced.

Set DBSTUDIES_SCREENSHOTS to a folder to keep the screenshots taken on the way."""
import os
import re
import shutil
import socket
import subprocess
import urllib.request
from pathlib import Path

import nbformat
import pytest
from processes import wait_for

from dbstudies.kernel import lab
from dbstudies.store.results import Run

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TOKEN = "dbstudies-browser-test"
VIEW = {"width": 1280, "height": 860}
TRIES = 3  # bad parameters right after an interrupted measurement
STEP = re.compile(r"Measuring step \d+ of \d+ — r\d+ \S.* · .* elapsed, about .* left")  # a step under way

pytestmark = [pytest.mark.notebook, pytest.mark.server, pytest.mark.browser]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def jupyterlab(tmp_path):
    """`make lab`'s JupyterLab on a copy of notebooks/ (a test changes a study notebook there),
    its working copies under tmp_path, on a free port."""
    port, home, notebooks = free_port(), tmp_path / "home", tmp_path / "notebooks"
    shutil.copytree(lab.paths.NOTEBOOKS_DIR, notebooks)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"), "JUPYTER_CONFIG_DIR": str(home / "config")}
    args = lab.argv(port=port, token=TOKEN, working_dir=tmp_path / "lab", notebook_dir=notebooks) \
        + ["--LabApp.expose_app_in_browser=True"]
    log = open(tmp_path / "lab.log", "w")
    server = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)

    def up() -> bool:
        try:
            return urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={TOKEN}", timeout=2).status == 200
        except OSError:
            return server.poll() is not None  # died: fail below, not after the timeout
    wait_for(up, 60, "JupyterLab to answer")
    assert server.poll() is None, (tmp_path / "lab.log").read_text()[-3000:]
    yield f"http://127.0.0.1:{port}", tmp_path
    server.terminate()
    server.wait(timeout=30)
    log.close()


def shot(page, name: str) -> None:
    where = os.environ.get("DBSTUDIES_SCREENSHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / f"{name}.png"))


def prompts(page) -> list[str]:
    return page.eval_on_selector_all(".jp-CodeCell .jp-InputPrompt", "els => els.map(e => e.textContent.trim())")


KERNEL_READY = """() => {
    const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
    return !!(w && w.sessionContext && w.sessionContext.isReady && k && k.connectionStatus === 'connected' && k.status === 'idle');
}"""


def kernel_ready(page) -> bool:
    """The notebook's own session says its kernel is connected and idle (the state Run All needs:
    before it, Lab clears the prompts and runs nothing; the status bar's 'Idle' comes earlier)."""
    return bool(page.evaluate(KERNEL_READY))


PARAMETERS = 2  # the parameters cell's place among the notebook's cells (after the title and the answer's place)


def run_all_with(page, lines: str, ready: bool = True) -> None:
    """Append `lines` to the parameters cell (later assignments win) and, once the cell shows
    them (and the kernel is ready, unless `ready` is False: right after an interrupt), Run All Cells."""
    editor = page.locator(".jp-Cell").nth(PARAMETERS).locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.insert_text("\n" + lines)
    last = lines.splitlines()[-1]
    wait_for(lambda: last in (editor.text_content() or ""), 30, f"the parameters cell to show {last!r}")
    if ready:
        wait_for(lambda: kernel_ready(page), 120, "the dbstudies kernel to be connected and idle")
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.locator("li[data-command='runmenu:run-all']").click()


def until(page, predicate, seconds: float, what: str, shots: Path) -> None:
    """`wait_for` in the browser; past its deadline, fail with what the page shows (the cells'
    prompts, the end of their outputs, a screenshot)."""
    try:
        wait_for(predicate, seconds, what)
    except AssertionError as e:
        page.screenshot(path=str(shots / "timed-out.png"))
        raise AssertionError(f"{e}; prompts {prompts(page)}; outputs …{outputs(page)[-1500:]}; "
                             f"screenshot {shots / 'timed-out.png'}") from None


def errors(page) -> list[str]:
    """The text of every stderr or error output (JupyterLab shows both as stderr); the text
    content, since cells scrolled out of view are not laid out."""
    return page.eval_on_selector_all(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']",
                                     "els => els.map(e => e.textContent)")


def outputs(page) -> str:
    """All the notebook's outputs as text (laid out or not)."""
    return "\n".join(page.eval_on_selector_all(".jp-OutputArea-output", "els => els.map(e => e.textContent)"))


def finished(page) -> bool:
    """Run All ended: no cell waits or runs, the kernel is idle."""
    p = prompts(page)
    return bool(p) and not any("*" in x for x in p) and page.locator(
        ".jp-Notebook-ExecutionIndicator[data-status='idle']").count() > 0


def in_view(page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= VIEW["height"] \
        and box["x"] >= 0 and box["x"] + box["width"] <= VIEW["width"]


def top_in_view(page, selector: str) -> bool:
    """The element starts on the screen, with at least its first 200 px in the window."""
    box = page.locator(selector).bounding_box()
    return box is not None and 0 <= box["y"] and box["y"] + min(box["height"], 200) <= VIEW["height"]


def snapshot(run_dir: Path) -> dict[str, int]:
    return {str(f.relative_to(run_dir)): f.stat().st_mtime_ns for f in run_dir.rglob("*")
            if f.is_file() and "variants" not in f.parts}


def checked_at(notebook: Path) -> int:
    """Which code cell checks the parameters (its prompt's place among the code cells)."""
    code = [c for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]
    return next(i for i, c in enumerate(code) if "checks.resolve_cell" in c.source)


def stopped_at_the_check(page, check: int) -> bool:
    """The parameters check ran (numbered) and no cell after it did: JupyterLab shows them unrun."""
    p = prompts(page)
    return bool(re.fullmatch(r"\[\d+\]:", p[check])) and all(x in ("[ ]:", "") for x in p[check + 1:])


def saved(page) -> bool:
    """The notebook's tab shows no unsaved change."""
    return page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty").count() == 0


def test_jupyterlab_run_all_shows_progress_stops_in_one_line_and_re_analyses_without_measuring(jupyterlab):
    from playwright.sync_api import sync_playwright
    url, tmp = jupyterlab
    repo = {f.name: f.read_bytes() for f in lab.paths.NOTEBOOKS_DIR.glob("*.ipynb")}
    check = checked_at(tmp / "notebooks" / "scaling.ipynb")
    runs = tmp / "runs"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport=VIEW)
        page.goto(f"{url}/lab/tree/scaling.ipynb?token={TOKEN}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        wait_for(lambda: kernel_ready(page), 120, "the dbstudies kernel to be connected and idle")

        # opened, not changed: a save (as autosave would) makes no working copy
        page.locator(".jp-Notebook").click()
        page.keyboard.press("Control+s")
        wait_for(lambda: saved(page), 30, "the save")
        assert not (tmp / "lab" / "scaling.ipynb").exists(), "a working copy of a notebook no one changed"

        # a bad parameter: one line, Run All stops there, the panel at the bottom says so
        run_all_with(page, 'profile = "fast"')
        until(page, lambda: page.locator("#dbstudies-banner").count() > 0, 180, "the panel to say where Run All stopped", tmp)
        until(page, lambda: finished(page), 60, "Run All to stop", tmp)
        assert "Stopped: ParamError" in page.inner_text("#dbstudies-banner") and in_view(page, "#dbstudies-banner")
        error = errors(page)
        assert any("unknown profile 'fast'" in e for e in error) and all(len(e.splitlines()) <= 3 for e in error), error
        assert stopped_at_the_check(page, check), prompts(page)  # it stopped, visibly
        shot(page, "1-bad-parameter")
        page.get_by_role("button", name="Show the cell").click()  # … and takes you there
        wait_for(lambda: in_view(page, ".jp-OutputArea-output[data-mime-type$=stderr]"), 10, "the error in view")

        # Run All on the smoke profile: the progress shows where the window is, not as an error
        page.click("#dbstudies-banner button[title=close]")
        run_all_with(page, f'profile = "smoke"\nthreads = [1]\nruns_root = "{runs}"')
        def measuring_now() -> bool:  # a step under way (r1 …), in the window without scrolling
            text = page.text_content("#dbstudies-banner") if page.locator("#dbstudies-banner").count() else ""
            return bool(STEP.search(text or "")) and in_view(page, "#dbstudies-banner")
        wait_for(measuring_now, 300, "the progress panel to show a step under way")
        shot(page, "2-progress-after-run-all")
        wait_for(lambda: finished(page) and page.locator("#dbstudies-banner").count() == 0, 600, "the run to end")
        shown = outputs(page)
        assert "Run complete:" in shown and "Measured 4 of 4 steps" in shown
        assert "Throughput (QPS) against one-thread-per-connection: pool-of-threads" in shown  # the answer
        assert page.locator(".jp-OutputArea-output img").count() >= 4, "the figures inline"
        assert not errors(page), errors(page)  # nothing on stderr: the progress is not an error
        (run_dir,) = [m.parent for m in runs.glob("*/*/metadata.json")]
        assert Run.open(run_dir).status == "complete"
        assert f'set run_dir = "{run_dir}"' in shown  # the line that re-analyses it
        # where Run All leaves the view: the answer at a glance, with a link to the Answer
        shot(page, "3-end-of-run-all")
        assert top_in_view(page, ".dbs-glance >> nth=-1") and "At a glance" in page.locator(".dbs-glance").last.inner_text()
        def grid_and_column() -> list[int]:  # laid out: JupyterLab renders the cells in view
            return page.evaluate("""() => { const g = Array.from(document.querySelectorAll('.dbs-glance')).pop();
                const t = g && g.querySelector('table.dbs-grid'), o = g && g.closest('.jp-OutputArea-output');
                return t && o ? [t.scrollWidth, o.clientWidth] : [0, 0]; }""")
        wait_for(lambda: grid_and_column()[0] > 0, 30, "the grid at the end laid out")
        table, column = grid_and_column()
        assert table <= column, (table, column)  # the grid fits the notebook's column: nothing off to the right
        shot(page, "3-end-of-run-all")
        page.evaluate("document.querySelector('.jp-WindowedPanel-outer').scrollTop = 0")  # the notebook's first screen
        wait_for(lambda: top_in_view(page, ".dbs-glance >> nth=0"), 10, "the answer at a glance on the first screen")
        shot(page, "4-first-screen")
        before = snapshot(run_dir)

        # only an analysis parameter changed: Run All re-analyses the kernel's run, measures nothing
        run_all_with(page, "draw_threshold = 0.02")
        wait_for(lambda: finished(page) and "re-analysis variant" in outputs(page), 300, "the re-analysis to end")
        shown = outputs(page)
        assert f"this kernel's last run, {run_dir.name}: re-analysing it (nothing is measured)" in shown
        assert f"Re-analysing run {run_dir.name} at draw_threshold = 0.02" in shown
        assert "Measuring step" not in shown and "Throughput (QPS) against one-thread-per-connection" in shown
        assert len(list(runs.glob("*/*/metadata.json"))) == 1, "a server started: a new run"
        # … and at the run's own parameters it reads the run as it is: nothing written
        run_all_with(page, "draw_threshold = None")
        wait_for(lambda: finished(page) and "re-analysis variant" not in outputs(page), 300, "the re-read to end")
        assert "re-analysing it (nothing is measured)" in outputs(page) and not errors(page), errors(page)

        # an interrupt mid-measurement: one line, the run marked interrupted, its steps kept. Steps
        # of a minute, so that the interrupt lands while they are measured however slow the page is
        # (with 2-s steps a loaded host once let a run end first: the next Run All re-analysed it)
        run_all_with(page, "threads = [2]\nduration = 60")
        wait_for(measuring_now, 300, "a step under way")
        page.get_by_role("menuitem", name="Kernel", exact=True).click()
        page.locator("li[data-command='kernelmenu:interrupt']").click()
        wait_for(lambda: finished(page) and page.locator("#dbstudies-banner").count() > 0
                 and "Stopped: interrupted." in page.text_content("#dbstudies-banner"), 120, "the interrupt")
        (stopped,) = [m.parent for m in runs.glob("*/*/metadata.json") if m.parent != run_dir]
        assert Run.open(stopped).status == "interrupted" and stopped.name in page.text_content("#dbstudies-banner")
        assert any("Stopped: interrupted." in e and len(e.splitlines()) <= 3 for e in errors(page)), errors(page)
        shot(page, "5-interrupted")

        # a bad parameter right after an interrupted measurement, three times: no cell after the check
        # runs (Run All's stop is installed once, at import — `passes`; ten tries, 11 of 11 clean, cost
        # 45 s of the suite's critical worker)
        for i in range(TRIES):
            before_try = len(list(runs.glob("*/*/metadata.json")))
            run_all_with(page, 'profile = "smoke"')
            until(page, lambda n=before_try: len(list(runs.glob("*/*/metadata.json"))) > n and "Measuring step" in (
                page.text_content("#dbstudies-banner") or "") if page.locator("#dbstudies-banner").count() else False,
                300, f"measurement {i + 1} to start", tmp)  # this pass's run and its panel (not an old one drawn again)
            page.get_by_role("menuitem", name="Kernel", exact=True).click()
            page.locator("li[data-command='kernelmenu:interrupt']").click()
            run_all_with(page, 'profile = "fast"', ready=False)  # at once, as a user would
            until(page, lambda: finished(page) and "ParamError" in (page.text_content("#dbstudies-banner") or ""),
                  120, f"Run All {i + 1} to stop at the check", tmp)
            assert stopped_at_the_check(page, check), f"try {i + 1}: cells ran after the failing check: {prompts(page)}"
        stopped = [m.parent for m in runs.glob("*/*/metadata.json") if m.parent != run_dir]
        assert len(stopped) == 1 + TRIES and all(Run.open(r).status == "interrupted" for r in stopped)
        shot(page, "6-interrupted-then-bad-parameter")
        page.keyboard.press("Control+s")
        wait_for(lambda: (tmp / "lab" / "scaling.ipynb").exists() and saved(page), 30, "the save")

        # the study's notebook changes (a `git pull`): the working copy says so, and the way back
        study = nbformat.read(tmp / "notebooks" / "scaling.ipynb", as_version=4)
        study.cells[0].source += "\n\nA sentence the study gained."
        nbformat.write(study, tmp / "notebooks" / "scaling.ipynb")
        page.reload()
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        wait_for(lambda: "has changed since" in (page.locator(".jp-Cell").first.text_content() or ""), 30,
                 "the notice that the study's notebook changed")
        shot(page, "7-study-notebook-changed")
        browser.close()
    assert snapshot(run_dir) == before, "a re-analysis changed what the run wrote"
    variant = run_dir / "variants" / "draw_threshold=0.02"
    assert list((variant / "figures").glob("*.png"))
    # what JupyterLab saved went to the working copy (its notice not saved), not the study's notebook
    copy = nbformat.read(tmp / "lab" / "scaling.ipynb", as_version=4)
    assert 'draw_threshold = 0.02' in copy.cells[PARAMETERS].source and any(c.get("outputs") for c in copy.cells)
    assert repo == {f.name: f.read_bytes() for f in lab.paths.NOTEBOOKS_DIR.glob("*.ipynb")}
    assert nbformat.read(tmp / "notebooks" / "scaling.ipynb", as_version=4) == study  # JupyterLab never wrote it
