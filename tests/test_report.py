"""report.html: header from the run's metadata, parameters table, title, banner for runs
that did not complete, no tracebacks and no absolute paths of this machine."""
import importlib
import re
import socket

import nbformat
import pytest
from conftest import FIXTURES, REPO, SMOKE_ORDER
from report_checks import opening_problems, read_in_chromium, report_problems, unused_option_problems

from dbstudies.core import paths
from dbstudies.kit.study import load
from dbstudies.measure import checks, ownership
from dbstudies.report import render
from dbstudies.report.shown import SKIP
from dbstudies.store.results import Run

setup_section = importlib.import_module("dbstudies.report.setup")  # the module (the face's `setup` is its section)

tp = load("thread_pool")


def executed_notebook(run, outputs):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# A study\nSome narrative."),
        nbformat.v4.new_code_cell("x = 1", outputs=outputs)])
    nbformat.write(nb, run.path / "notebook.ipynb")


def test_failed_run_gets_a_banner_and_no_traceback(tmp_path):
    run = ownership.create_run("thread_pool", checks.resolve(tp, "smoke", repeats=3), tmp_path, "cli")
    for arm in ("pool-of-threads", "one-thread-per-connection"):  # paired: a folder per server
        (run.path / "server" / arm).mkdir(parents=True)
        (run.path / "server" / arm / "mariadb-10.11.err").write_text("...")
    executed_notebook(run, [
        nbformat.v4.new_output("stream", name="stdout", text=f"run directory: {run.path}\n"),
        nbformat.v4.new_output("error", ename="ServerDied", evalue="died",
                               traceback=["Traceback (most recent call last):", "boom"])])
    run.finish("failed", "ServerDied: server mariadb-10.11 died during sysbench run (exit code -9)\n"
                         "--- server error log (tail) ---")
    html = render.render(run).read_text()
    assert "<b>Run failed</b>: ServerDied: server mariadb-10.11 died during sysbench run" in html
    assert ("Server logs under server/: one-thread-per-connection/mariadb-10.11.err, "
            "pool-of-threads/mariadb-10.11.err") in html
    assert "It measured 0 steps." in html and "nothing to analyse" in html
    assert "To measure it again: <code>dbstudies run thread_pool --profile smoke -p repeats 3</code>" in html
    assert "analysis stopped" not in html  # the run's own error, said once
    assert "Traceback" not in html and "boom" not in html
    assert re.search(r"<title>thread_pool — run \S+</title>", html)
    assert str(tmp_path) not in html and f"…/thread_pool/{run.path.name}" in html
    params = html.split("The run's facts and parameters", 1)[1]
    assert "<code>repeats</code></td><td>3</td><td>2</td><td>changed</td>" in params
    assert "<code>duration</code></td><td>1</td><td>1</td><td></td>" in params
    assert html.index("<h1") < html.index("<section class='dbs-header'>")  # under the title
    assert html.index("class='dbs-setupline'") < html.index("<details><summary>The run's facts")


def test_missing_notebook_is_a_clear_error(tmp_path):
    run = Run.create("thread_pool", {}, root=tmp_path)
    with pytest.raises(render.DbStudiesError, match="has no executed notebook"):
        render.render(run)


@pytest.mark.notebook
@pytest.mark.server
def test_smoke_report_has_the_header_and_no_machine_paths(smoke_run):
    proc, run_dir = smoke_run("thread_pool")
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
    # the host's name as a "host:port" would show it — a whole word: a short name like "vm" is
    # also the tail of kernel symbols in the CPU flame graph ("…_expand_vm: 1 samples")
    assert "/tmp/" not in html and not re.search(rf"(?<![\w.-]){re.escape(socket.gethostname())}:", html)
    assert "Params(" not in html  # the parameters are a table, not a repr
    assert 'alt="queries per second against client threads (1, 64)' in html
    assert "No description has been provided" not in html  # every figure has alt text
    assert paths.REPO.name not in re.findall(r"/[\w.-]+/[\w.-]+", html.split("<body", 1)[1])


@pytest.mark.notebook
@pytest.mark.server
@pytest.mark.browser
# the smoke runs in the order test_notebooks does not take them: a worker here measures the ones
# the other has not reached instead of waiting on its lock (each is still measured once)
@pytest.mark.parametrize("name", SMOKE_ORDER[::-1])
def test_smoke_report_renders_in_headless_chromium(name, smoke_run, tmp_path):
    """What a reader sees: each study's smoke report in a real browser at 1,300 px with the
    network off — it asks for nothing beyond its file, no table is wider than the window, the
    page as the browser built it holds no exception text, no empty section, no path of this
    machine, no wording issue 43 found, no description of an option the run did not use —
    and its screenshot is not blank."""
    import numpy as np
    from PIL import Image

    proc, run_dir = smoke_run(name)
    assert proc.returncode == 0
    shot = tmp_path / "report.png"
    seen = read_in_chromium(run_dir / "report.html", shot)
    assert seen["requests"] == []
    assert seen["widest"][0] <= 1280 and seen["page_width"] <= 1300, seen["widest"]  # issue 66: 1,280 px
    assert seen["grid"] <= 868, seen["grid"]  # the answer grid fits JupyterLab's notebook column
    assert "</body>" in seen["dom"] and report_problems(seen["dom"]) == []
    assert opening_problems(seen["dom"]) == []
    assert unused_option_problems(seen["dom"], Run.open(run_dir).metadata["parameters"]) == []
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert pixels.shape[1] == 1300 and pixels.shape[0] > 2000
    assert pixels.std() > 10 and (pixels < 128).mean() > 0.005  # text and plots, not a blank page


def test_prune_leaves_out_what_does_not_apply_and_cuts_after_a_failed_cell():
    md, code, out = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell, nbformat.v4.new_output
    shown = [out("stream", name="stdout", text="a table\n")]
    skipped = [out("display_data", data={"text/markdown": "*off*"}, metadata={SKIP: True})]
    nb = nbformat.v4.new_notebook(cells=[
        md("An Exception was encountered at 'In [9]'", metadata={"tags": [render.PAPERMILL_ERROR]}),
        md("# Title\nThe question."),
        md("## Applies"), md("caption of a figure"), code("a", outputs=shown),
        md("## Does not apply"), md("caption"), code("b", outputs=skipped),
        md("### a subsection of it"), code("c", outputs=skipped),
        md("## Half applies"), md("caption of nothing"), code("d", outputs=[]),
        md("caption kept"), code("e", outputs=shown + [out("stream", name="stderr", text="warn")]),
        md("## Fails"), code("f", outputs=shown + [out("error", ename="KeyError", evalue="'x'",
                                                           traceback=["Traceback"])]),
        md("## Never ran"), code("g", outputs=[])])
    stopped = render.prune(nb)
    assert stopped == ("Fails", "KeyError: 'x'")
    assert [c.source for c in nb.cells] == [
        "# Title\nThe question.", "## Applies", "caption of a figure", "a",
        "## Half applies", "caption kept", "e", "## Fails", "f"]
    kinds = [o.output_type + o.get("name", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert kinds == ["streamstdout"] * 3  # stderr and the error gone, the failing cell's table kept


@pytest.mark.notebook
def test_a_run_that_ends_before_any_step_gets_a_clean_report(tmp_path):
    """0 finished steps: the analysis stops at once (NothingMeasured) and the report says how
    far the run got and how to run it again; no exception text, no empty section."""
    import json
    import shutil
    import subprocess
    import sys
    fixture = next((REPO / "tests" / "fixtures" / "runs" / "thread_pool").iterdir())
    run_dir = tmp_path / "thread_pool" / fixture.name
    shutil.copytree(fixture, run_dir, ignore=shutil.ignore_patterns("tables"))
    meta = json.loads((run_dir / "metadata.json").read_text())
    meta.update(status="interrupted", error="interrupted by SIGINT", tables={})
    (run_dir / "metadata.json").write_text(json.dumps(meta))
    # the progress counts a pair's first step once its second begins; interrupted then, the
    # pair was never stored: what counts is what the tables hold (a real Ctrl-C found this)
    (run_dir / "progress.json").write_text(json.dumps({"done": 1, "total": 12, "now": "r1 pool 8"}))
    p = subprocess.run([sys.executable, "-m", "dbstudies", "report", "--analyse", str(run_dir)],
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr
    html = (run_dir / "report.html").read_text()
    assert "<b>Run interrupted</b>: interrupted by SIGINT. It measured 0 of 12 planned steps." in html
    assert "Under way when it ended: r1 pool 8." in html and "nothing to analyse" in html
    # recorded before a smoke run was pinned to one CPU: measured again as it was, unpinned
    assert ("To measure it again: <code>dbstudies run thread_pool --profile smoke -p server_cpus null "
            "-p threads ") in html and "-p client_cpus null" in html
    assert report_problems(html) == []
    assert re.findall(r"<h2[^>]*>([^<]*)", html) == ["Measurement"]  # nothing analysed


def test_report_problems_finds_words_a_second_reader_would_quote_wrongly():
    """Each class of issue 43's wording defects, as the reports printed them before."""
    from report_checks import unused_option_problems
    old = ("<body><h1>T</h1><p>Settings that still differ between A and B (1; the verdicts include them; "
           "thread_handling is what the arms vary): thread_handling (x vs y).</p>"
           "<p>oltp_point_select: peak median 62,120 QPS with A at 16 client threads.</p>"
           "<p>2 measured steps still ran on a busy host (<code>steps.host_busy</code>); see "
           "<code>metadata.json</code>.</p></body>")
    assert report_problems(old) == [
        "the varied factor listed as a difference: 'thread_handling is what the arms vary)'",
        "a peak without its grid: 'oltp_point_select: peak median 62,120 QPS with A at 16 client threads'",
        "a code name in prose: steps.host_busy"]
    new = ("<body><h1>T</h1><p>A and B differ in what the study varies — <code>thread_handling</code> (x vs y) — "
           "and also 1 setting the study does not vary still differs (the verdicts include its effect): "
           "<code>thread_handling</code> (x vs y).</p></body>")
    assert report_problems(new) == ["the varied factor thread_handling listed as a difference"]
    latency = ("<body><h1>T</h1><p>The levels bracket where the baseline's p99 crosses the target, so that each "
               "round's capacity is an interpolation between two measured levels, not a bound.</p>"
               "<table><tr><td>2 (≥)</td></tr></table><p>p50 at 0.9: not compared: above 70 % of the peak, "
               "where p99 amplifies a small capacity difference.</p></body>")
    assert report_problems(latency) == ["says the capacity is not a bound beside rounds that gave only a bound",
                                        "a reason about p99 given for another percentile's rows"]
    said = "<p>With <code>aa_control = True</code> the baseline gets a twin; <code>design = \"blocks\"</code> measures…</p>"
    assert unused_option_problems(said, {"aa_control": False, "design": "paired"}) == [
        "describes aa_control = True, which the run did not use", 'describes design = "blocks", which the run did not use']
    assert unused_option_problems(said, {"aa_control": True, "design": "blocks"}) == []


def test_report_problems_finds_what_a_reader_must_not_meet():
    good = "<body><h1>T</h1><p>x</p><h2>A</h2><img src='a.png'><h2>B</h2><h3>b</h3><table>1</table></body>"
    assert report_problems(good) == []
    bad = ("<head><script src='https://cdn.example/require.js'></script>"
           "<script type='module'>const m = await import(\"https://cdn.example/mermaid.mjs\")</script></head>"
           "<body><h1>T</h1><h2>Empty</h2><h2>Also empty</h2>\\n<h3>under it</h3> <h2>Full</h2>"
           "<p>Traceback at /tmp/x/run.py</p></body>")
    assert report_problems(bad) == ["says 'Traceback'", "machine path '/tmp/x/run.py'",
                                    "fetches https://cdn.example/require.js",
                                    "a script that could fetch https://cdn.example/mermaid.mjs",
                                    "empty section Empty", "empty section under it"]


def test_the_header_shows_what_differs_between_arms_the_data_and_the_client_command():
    gv = {"version": "10.11.19", "innodb_buffer_pool_size": "134217728", "thread_handling":
          "one-thread-per-connection", "port": "40001", "datadir": "/tmp/x/", "tmp_table_size": "16777216"}
    meta = {"arms": [{"label": "A"}, {"label": "B"}], "parameters": {"duration": 3},
            "servers": [{"label": "prepare A", "global_variables": gv},
                        {"label": "A", "global_variables": gv},
                        {"label": "B", "global_variables": {**gv, "port": "40002", "thread_handling": "pool-of-threads",
                                                            "tmp_table_size": "33554432"}}],
            "data": [{"server": "A", "schema": "sbtest", "bytes": 268435456, "rows": 1000000}],
            "sysbench": {"calls": [
                {"command": "run", "workload": "oltp_read_only", "env": {"DBSTUDIES_WORKLOAD": "oltp_read_only"},
                 "argv": ["sysbench", "w.lua", f"--mysql-socket=/tmp/dbs-{i}/s.sock", f"--threads={t}",
                          f"--time={d}", f"--rand-seed={i}", "run"]}
                for i, (t, d) in enumerate([(8, 1), (1, 3), (16, 3), (1, 3)])]}}
    config = setup_section.configuration(meta)
    rows = re.findall(r"<tr( class='dbs-differs')?><td><code>(\w+)</code></td><td>([^<]*)</td><td>([^<]*)</td>", config)
    assert ("", "version", "10.11.19", "10.11.19") in rows
    assert (" class='dbs-differs'", "thread_handling", "one-thread-per-connection", "pool-of-threads") in rows
    assert ("", "innodb_buffer_pool_size", "128 MiB", "128 MiB") in rows
    assert (" class='dbs-differs'", "tmp_table_size", "16 MiB", "32 MiB") in rows
    assert "port" not in {r[1] for r in rows} and "datadir" not in {r[1] for r in rows}
    assert "A: 256 MiB (sbtest 256 MiB, ≈ 1,000,000 rows) — 2 × its buffer pool (128 MiB)" in setup_section.data_sizes(meta)
    client = setup_section.client_commands(meta)
    assert ("DBSTUDIES_WORKLOAD=oltp_read_only sysbench w.lua --mysql-socket=… --threads={1, 16} "
            "--time=3 --rand-seed=… run") in client  # the measured steps' (not the 1-s warm-up's)
    assert setup_section.configuration({"arms": []}) == setup_section.data_sizes({}) == setup_section.client_commands({}) == ""


@pytest.mark.notebook
def test_the_recorded_quick_run_s_report_opens_with_the_answer_at_a_glance(tmp_path):
    """The README's quick run re-rendered: under the title the set-up line, at most five
    lines and the coloured grid (a cell left short of its target marked), the lead words
    (≤ 300), and only then the run's facts, folded."""
    import shutil
    import subprocess
    import sys
    source = next((FIXTURES / "make_study" / "thread_pool").iterdir())
    run_dir = tmp_path / source.name
    shutil.copytree(source, run_dir)
    proc = subprocess.run([sys.executable, "-m", "dbstudies", "report", str(run_dir), "--analyse"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    html = (run_dir / "report.html").read_text()
    assert opening_problems(html) == []
    opening = html.split("class='dbs-first", 1)[1].split("The run's facts", 1)[0]
    assert opening.count("pairs<br><b>short</b>") == 3  # the cells the loop left short: both at 256 client threads, and 16 (one pair more)
    assert "−20.4 %<br>[−26.8, −13.4]" in opening and "virtual machine (kvm), 2 CPUs" in html  # in the grid, short
