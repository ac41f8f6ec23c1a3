"""report.html: header from the run's metadata, parameters table, title, banner for runs
that did not complete, no tracebacks and no absolute paths of this machine."""
import re
import socket

import nbformat
import pytest
from conftest import REPO

from dbstudies import experiment, ownership, paths, report
from dbstudies.results import Run
from dbstudies.study import load

tp = load("thread_pool")


def executed_notebook(run, outputs):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# A study\nSome narrative."),
        nbformat.v4.new_code_cell("x = 1", outputs=outputs)])
    nbformat.write(nb, run.path / "notebook.ipynb")


def test_failed_run_gets_a_banner_and_no_traceback(tmp_path):
    run = ownership.create_run("thread_pool", experiment.resolve(tp, "smoke", repeats=3), tmp_path, "cli")
    for arm in ("pool-of-threads", "one-thread-per-connection"):  # paired: a folder per server
        (run.path / "server" / arm).mkdir(parents=True)
        (run.path / "server" / arm / "mariadb-10.11.err").write_text("...")
    executed_notebook(run, [
        nbformat.v4.new_output("stream", name="stdout", text=f"run directory: {run.path}\n"),
        nbformat.v4.new_output("error", ename="ServerDied", evalue="died",
                               traceback=["Traceback (most recent call last):", "boom"])])
    run.finish("failed", "ServerDied: server mariadb-10.11 died during sysbench run (exit code -9)\n"
                         "--- server error log (tail) ---")
    html = report.render(run).read_text()
    assert "<b>Run failed</b>: ServerDied: server mariadb-10.11 died during sysbench run" in html
    assert ("server logs under server/: one-thread-per-connection/mariadb-10.11.err, "
            "pool-of-threads/mariadb-10.11.err") in html
    assert "Traceback" not in html and "boom" not in html
    assert re.search(r"<title>thread_pool — run \S+</title>", html)
    assert str(tmp_path) not in html and f"…/thread_pool/{run.path.name}" in html
    params = html.split("Parameters", 1)[1]
    assert "<code>repeats</code></td><td>3</td><td>2</td><td>changed</td>" in params
    assert "<code>duration</code></td><td>2</td><td>2</td><td></td>" in params
    assert html.index("<h1") < html.index("<section class='dbs-header'>")  # under the title


def test_missing_notebook_is_a_clear_error(tmp_path):
    run = Run.create("thread_pool", {}, root=tmp_path)
    with pytest.raises(report.DbStudiesError, match="has no executed notebook"):
        report.render(run)


@pytest.mark.notebook
@pytest.mark.server
def test_smoke_report_has_the_header_and_no_machine_paths(smoke_run):
    proc, run_dir = smoke_run("thread_pool.ipynb")
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = Run.open(run_dir)
    meta = run.metadata
    html = (run_dir / "report.html").read_text()
    assert f"<title>thread_pool — run {run_dir.name}</title>" in html
    for fact in (run_dir.name, "<th>status</th><td>complete</td>", meta["dbstudies"]["commit"][:12],
                 meta["host"]["cpu_model"], "mariadb-10.11 (10.11.", "<th>sysbench</th><td>1.0.20",
                 "started (UTC)", "ended (UTC)"):
        assert fact in html, fact
    assert "<div class='dbs-banner" not in html and "Traceback" not in html
    assert str(REPO) not in html and str(run_dir.parent.parent) not in html
    assert "/tmp/" not in html and socket.gethostname() + ":" not in html
    assert "Params(" not in html  # the parameters are a table, not a repr
    assert 'alt="queries per second against client threads (1, 8, 64)' in html
    assert "No description has been provided" not in html  # every figure has alt text
    assert paths.REPO.name not in re.findall(r"/[\w.-]+/[\w.-]+", html.split("<body", 1)[1])


@pytest.mark.notebook
@pytest.mark.server
def test_smoke_report_renders_in_headless_chromium(smoke_run, tmp_path):
    """What a reader sees: the report in a real browser, screenshot non-blank."""
    import shutil
    import subprocess

    import numpy as np
    from PIL import Image

    proc, run_dir = smoke_run("thread_pool.ipynb")
    assert proc.returncode == 0
    browser = shutil.which("chromium")
    assert browser, "chromium is missing: `make setup` installs it"
    shot = tmp_path / "report.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1300,2400",
                    f"--screenshot={shot}", (run_dir / "report.html").as_uri()],
                   capture_output=True, timeout=120, check=True)
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert pixels.shape == (2400, 1300)
    assert pixels.std() > 10 and (pixels < 128).mean() > 0.005  # text and plots, not a blank page
