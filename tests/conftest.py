"""Shared fixtures. Server tests start real private MariaDB servers (never mocks)."""
from __future__ import annotations

import contextlib
import html as html_lib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dbstudies import paths, proc, servers

# the study of your own is measured through the CLI, from a copy outside the repository
# (test_outside_study); nbval must not execute its notebook in place as a test notebook
collect_ignore_glob = ["fixtures/outside_study/*.ipynb"]

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"


processes_mentioning = proc.find_processes


def run_logged(argv: list[str], where: Path, timeout: float, **kw) -> subprocess.CompletedProcess:
    """Run a command line to its end with its output in files under `where` (never pipes: a
    process it leaves behind cannot hold the test), stdin closed. Past `timeout` it fails with
    what a reader needs to find the hang: the command's Python stacks (`dbstudies` dumps them
    on SIGUSR1), every process it started, the tail of its output and of each kernel.log and
    progress.json under `where`."""
    import psutil
    where.mkdir(parents=True, exist_ok=True)
    out, err = where / "stdout.txt", where / "stderr.txt"
    with open(out, "w") as o, open(err, "w") as e:
        p = subprocess.Popen(argv, stdout=o, stderr=e, stdin=subprocess.DEVNULL, start_new_session=True, **kw)
        try:
            code = p.wait(timeout)
        except subprocess.TimeoutExpired:
            tree = {}  # pid → command line, of what is still running
            with contextlib.suppress(psutil.Error):
                for q in [psutil.Process(p.pid), *psutil.Process(p.pid).children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        tree[q.pid] = " ".join(q.cmdline())
            listing = "\n".join(f"{pid} {cmd[:200]}" for pid, cmd in tree.items())
            def written() -> int:  # its stderr: the terminal's, or a run's kernel.log while a notebook executes
                return sum(f.stat().st_size for f in [err, *where.rglob("kernel.log")])
            before = written()
            for pid, cmd in tree.items():  # the command and its kernel dump their stacks
                if "dbstudies" in cmd or "ipykernel" in cmd:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGUSR1)
            with contextlib.suppress(AssertionError):  # the dump's first bytes, or nothing to show
                wait_for(lambda: written() > before, 5, "a stack dump")
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            logs = "".join(f"\n--- {f}\n{f.read_text(errors='replace')[-10000:]}"
                           for f in sorted([*where.rglob("kernel.log"), *where.rglob("progress.json")]))
            pytest.fail(f"{' '.join(map(str, argv))} still running after {timeout:.0f} s\n--- processes\n{listing}\n"
                        f"--- stdout\n{out.read_text()[-3000:]}\n"
                        f"--- stderr\n{err.read_text(errors='replace')[-6000:]}{logs}", pytrace=False)
    return subprocess.CompletedProcess(argv, code, out.read_text(), err.read_text())


def wait_for(predicate, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture(scope="session")
def flavour() -> servers.Flavour:
    f = servers.load_flavour("mariadb-10.11")
    servers.check_installed(f)  # fails (not skips) when the server is missing: `make setup` installs it
    return f


@pytest.fixture
def server(flavour, tmp_path):
    """A started private server in tmp_path; stopped (and checked gone) afterwards."""
    with servers.Server(flavour, tmp_path / "srv") as s:
        s.start()
        yield s
    assert processes_mentioning(str(tmp_path / "srv")) == []


@pytest.fixture(scope="session")
def tpch_server(flavour, tmp_path_factory):
    """One private server with TPC-H SF 0.01 loaded, shared by the tests that only read it."""
    from dbstudies import tpch
    where = tmp_path_factory.mktemp("tpch") / "srv"
    with servers.Server(flavour, where) as s:
        s.start()
        tpch.load(s, tpch.generate(0.01, say=lambda m: None), say=lambda m: None)
        yield s
    assert processes_mentioning(str(where)) == []


@contextlib.contextmanager
def prepared(flavour, where: Path, workload: str, **scale):
    """A started private server in `where` with `workload`'s tables loaded (2 loaders):
    (server, its Sysbench client at that scale)."""
    from dbstudies.workloads.sysbench import Sysbench
    with servers.Server(flavour, where, max_clients=64) as s:
        s.start()
        sb = Sysbench(s, **scale)
        sb.prepare(workload, threads=2)
        yield s, sb


@pytest.fixture
def kill_leftovers():
    """Kill (and report) processes that a test left behind, matched by a marker string."""
    markers: list[str] = []
    yield markers.append
    for m in markers:
        for pid in processes_mentioning(m):
            os.kill(pid, signal.SIGKILL)


# notebook → the `dbstudies run` arguments of its one execution in the suite, where they are
# not the smoke profile's (a new study's notebook runs its smoke profile without being named
# here). The thread-pool one is the README's example.
SMOKE = ["--profile", "smoke"]
SMOKE_RUNS = {"thread_pool.ipynb": ["--profile", "smoke", "-p", "threads", "[1,8,64]",
                                    "-p", "duration", "2", "-p", "cpu_profile", "true",
                                    "-p", "positive_control", '{"pause_ms": 200, "every_s": 1}']}


NOTEBOOKS = sorted(p.name for p in paths.NOTEBOOKS_DIR.glob("*.ipynb"))  # every built-in study's
# the order their smoke runs execute in: the README's first (the longest, and the one a test in
# another file, on the other worker, waits for), the others as they sort
SMOKE_ORDER = sorted(NOTEBOOKS, key=lambda name: (name not in SMOKE_RUNS, name))


def smoke_argv(name: str) -> list[str]:
    return SMOKE_RUNS.get(name, SMOKE)


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """Execute a notebook once per test session, through the CLI (`dbstudies run`, which
    executes it with papermill and renders the report): name → (completed process, run
    directory). Once for all of `pytest -n 2`'s workers too: the first to ask runs it under a
    lock in their shared temporary directory, the others wait on that lock and read what it kept."""
    import fcntl
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # pytest-N/, above each worker's popen-gwK/
    done: dict[str, tuple] = {}

    def execute(name: str):
        if name not in done:
            stem = name.removesuffix(".ipynb")
            runs = shared / f"smoke-{stem}"
            with open(shared / f"smoke-{stem}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # released when the run (by whoever took it) has ended
                kept = shared / f"smoke-{stem}.json"
                if not kept.exists():
                    argv = [sys.executable, "-m", "dbstudies", "run", stem, *smoke_argv(name), "--runs-dir", str(runs)]
                    p = subprocess.run(argv, capture_output=True, text=True, timeout=900, cwd=REPO)
                    kept.write_text(json.dumps({"args": p.args, "returncode": p.returncode,
                                                "stdout": p.stdout, "stderr": p.stderr}))
                k = json.loads(kept.read_text())
            run_dirs = list(runs.glob("*/*/metadata.json"))
            done[name] = (subprocess.CompletedProcess(k["args"], k["returncode"], k["stdout"], k["stderr"]),
                          run_dirs[0].parent if len(run_dirs) == 1 else None)
        return done[name]
    return execute


NUMBER = r"(?<![\w.,-])[-−+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.,]?\w)"


def number_problems(text: str) -> list[str]:
    """Numbers that mean nothing to a reader, in a report's visible text: `nan` or `inf`,
    e-notation, more than 7 significant digits (IDs glued to letters, dates and versions
    are not numbers here).

    >>> number_problems("p = 1.1e-12; nan %; 91,728.612284 QPS; 11,534,336 B; 1,000,000 rows; run 20261125T2146Z-1369e3; 10.11.19; 137,592.9")
    ["e-notation '1.1e-12'", "says 'nan'", "more than 7 significant digits '91,728.612284'", "more than 7 significant digits '11,534,336'"]

    A hash named as one is an identifier, whatever its digits (a commit 91736386e492 failed
    every smoke report of a CI run as e-notation):

    >>> number_problems("dbstudies commit 91736386e492; sha256 12345678901e; 2e+06 rows")
    ["e-notation '2e+06'"]
    """
    import re
    out = []
    text = re.sub(r"\b(commit|sha256) [0-9a-f]{7,64}\b", r"\1 <hash>", text)
    for m in re.finditer(NUMBER, text):
        token = m.group(0)
        if re.search(r"[eE]", token):
            out.append(f"e-notation {token!r}")
            continue
        digits = re.sub(r"\D", "", token.split(".")[0]).lstrip("0")
        frac = token.split(".")[1] if "." in token else ""
        sig = (digits + frac).lstrip("0") if digits else frac.lstrip("0")
        if not frac:
            sig = sig.rstrip("0")
        if len(sig) > 7:
            out.append(f"more than 7 significant digits {token!r}")
    bad_words = sorted(set(re.findall(r"(?<![\w-])(nan|NaN|inf|-inf)(?![\w-])", text)))
    out[1:1] = [f"says {w!r}" for w in bad_words]
    return out


FILE_ENDINGS = r"json|cnf|html|lua|ipynb|toml|ya?ml|txt|py|sql|svg|png|parquet|tbl|csv|mjs|js|log|sys|so|ibd"


def reader_problems(text: str, body: str) -> list[str]:
    """What a report says that a second reader would quote wrongly (issue 43): the factor the
    arms vary listed again as a setting that still differs; a "peak" that does not say it is
    of the thread counts measured; a code name (a dotted Python name) in prose."""
    import re
    out = []
    flat = re.sub(r"\s+", " ", text)
    varied = re.search(r"differ in what the study varies — (.*?) —", flat)
    still = re.search(r"still differs? \(the verdicts include[^)]*\): (.*?)(?:\.\s|\.?$)", flat)
    if varied and still:
        names = re.findall(r"(\w+) \(", varied.group(1))
        out += [f"the varied factor {n} listed as a difference" for n in names if re.search(rf"\b{n}\b", still.group(1))]
    out += [f"the varied factor listed as a difference: {m!r}" for m in re.findall(r"\w+ (?:is|are) what the arms vary\)", text)]
    out += [f"a peak without its grid: {m.strip()!r}" for m in re.findall(r"[^.]*\bpeak median\b[^.]*", text)]
    if re.search(r"\bnot a bound\b", flat) and re.search(r"\d+ \((?:≥|<)\)", flat):
        out.append("says the capacity is not a bound beside rounds that gave only a bound")
    out += ["a reason about p99 given for another percentile's rows" for _ in re.findall(r"where p99 amplifies", flat)][:1]
    prose = re.sub(r"<(table|pre|details)\b.*?</\1>", "", body, flags=re.S)
    out += [f"a code name in prose: {m}" for m in sorted(set(re.findall(r"<code>([A-Za-z_]\w*\.[A-Za-z_][\w.]*)</code>", prose)))
            if not re.search(rf"\.(?:{FILE_ENDINGS})$", m)]
    return out


def unused_option_problems(html: str, parameters: dict) -> list[str]:
    """Descriptions of an option the run did not use: the A/A twin, the blocks design."""
    import re
    text = html_lib.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style|svg)\b.*?</\1>", "", html, flags=re.S)))
    out = []
    if not parameters.get("aa_control") and re.search(r"aa_control\s*=\s*True", text):
        out.append("describes aa_control = True, which the run did not use")
    if parameters.get("design", "paired") != "blocks" and re.search(r"design\s*=\s*.?blocks", text):
        out.append("describes design = \"blocks\", which the run did not use")
    if parameters.get("design") == "blocks" and "(paired design)" in text:
        out.append("describes the paired design in a blocks run")
    return out


def report_problems(html: str) -> list[str]:
    """What a reader must never meet in a report: exception text, papermill's banners, a
    heading with nothing under it, a path of this machine, a number that means nothing
    (`number_problems`), words a second reader would quote wrongly (`reader_problems`) — and a
    page that fetches anything from the network or has a script that could (a script, style,
    image or font: a report is read offline)."""
    import re
    body = html.split("<body", 1)[-1]
    text = re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style|svg)\b.*?</\1>", "", body, flags=re.S))
    text = html_lib.unescape(text)
    problems = [f"says {w!r}" for w in ("Traceback", "Exception", "papermill", "Error:", "KeyError")
                if w in text]
    problems += number_problems(text)
    problems += [f"machine path {m!r}" for m in sorted(set(re.findall(r"(?:/tmp|/work|/home|/root)/[\w./-]*", text)))]
    problems += [f"fetches {u}" for u in sorted(set(re.findall(
        r"""(?:\b(?:src|href)\s*=\s*["']?|url\(\s*["']?|@import\s+["'])(https?://[^"')\s>]+)""", html)))]
    problems += [f"a script that could fetch {u}" for script in re.findall(r"<script\b[^>]*>(.*?)</script>", html, flags=re.S)
                 for u in sorted(set(re.findall(r"https?://[^\s\"'`)]+", script)))]
    problems += reader_problems(text, body)
    parts = re.split(r"(<h[1-6][^>]*>.*?</h[1-6]>)", body, flags=re.S)
    for i in range(1, len(parts), 2):
        level = int(parts[i][2])
        under = ""
        for j in range(i + 1, len(parts)):
            if j % 2 and int(parts[j][2]) <= level:
                break
            under += parts[j]
        if not re.sub(r"<[^>]+>|\s|¶", "", under) and "<img" not in under and "<svg" not in under:
            problems.append("empty section " + re.sub(r"<[^>]+>|¶", "", parts[i]).strip())
    return problems


def read_in_chromium(page_path: Path, shot: Path | None = None, width: int = 1300) -> dict:
    """A report as a reader opens it: the system Chromium (Playwright, nothing downloaded) at
    `width` px with the network off. Returns the page as the browser built it (`dom`), every
    request it tried beyond the file itself (`requests`: none may leave a report), the
    widest table (`widest`: its width in px and its first header cells) and the page's
    width; `shot`: a full-page screenshot there."""
    import shutil

    from playwright.sync_api import sync_playwright
    tried: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context(viewport={"width": width, "height": 1000}, offline=True)
        page = context.new_page()
        page.on("request", lambda r: None if r.url.startswith(("file:", "data:", "blob:", "about:")) else tried.append(r.url))
        page.goto(page_path.resolve().as_uri(), wait_until="load")
        widest = page.evaluate("""() => Array.from(document.querySelectorAll('table'))
            .filter(t => t.offsetParent !== null || t.closest('details'))
            .map(t => [Math.max(t.scrollWidth, t.getBoundingClientRect().width),
                       Array.from(t.querySelectorAll('th')).slice(0, 3).map(h => h.textContent.trim()).join(' | ')])
            .sort((a, b) => b[0] - a[0])[0] || [0, '']""")
        opened = page.evaluate("""() => { document.querySelectorAll('details').forEach(d => d.open = true);
            return Math.max(0, ...Array.from(document.querySelectorAll('table')).map(t => t.scrollWidth)); }""")
        page_width = page.evaluate("() => document.documentElement.scrollWidth")
        if shot is not None:
            page.screenshot(path=str(shot), full_page=True)
        dom = page.content()
        browser.close()
    return {"dom": dom, "requests": tried, "widest": (max(widest[0], opened), widest[1]), "page_width": page_width}


# ---------------------------------------------------------------- tiers: live tests carry their marker
# `make check` runs what needs none of these (no server, no kernel, no browser); `make test`
# runs everything. A test that starts one of them without its marker fails here, so the fast
# tier can never start one by accident.
LIVE = {"server": "starts a database server", "notebook": "starts a Jupyter kernel or a notebook run",
        "browser": "drives a browser"}
_STARTED: dict[str, set[str]] = {}
_CURRENT: list[str | None] = [None]


def live_kinds(argv: list[str]) -> set[str]:
    """What a command line starts, of `LIVE` (an argv the tests or the library spawn).

    >>> sorted(live_kinds(["/usr/sbin/mariadbd", "--defaults-file=x"])), live_kinds(["mariadbd", "--version"])
    (['server'], set())
    >>> sorted(live_kinds(["python", "-m", "dbstudies", "run", "thread_pool"])), sorted(live_kinds(["chromium", "--headless"]))
    (['notebook', 'server'], ['browser'])
    """
    names = [os.path.basename(str(a)) for a in argv]
    if "--version" in names or "--help" in names:
        return set()
    out = set()
    if {"mariadbd", "mysqld", "mariadb-install-db", "mysqld_safe"} & set(names):
        out.add("server")
    if any(n in ("chromium", "chromium-browser", "chrome") or "playwright" in str(a) for n, a in zip(names, argv)):
        out.add("browser")
    if "ipykernel_launcher" in names or "ipykernel" in names or "jupyter-lab" in names:
        out.add("notebook")
    if "dbstudies" in names:
        verb = names[names.index("dbstudies") + 1] if names.index("dbstudies") + 1 < len(names) else ""
        out |= {"run": {"server", "notebook"}, "sweep": {"server", "notebook"}, "report": {"notebook"},
                "replicate": {"server", "notebook"},
                "lab": {"notebook"}, "plan": set()}.get(verb, set())
    return out


def _recording_popen() -> None:
    """Every process the test session starts is classified (`live_kinds`) against the test
    under way, its fixtures' set-up included."""
    original = subprocess.Popen.__init__

    def init(self, args, *a, **kw):  # noqa: ANN001
        if _CURRENT[0] is not None:
            argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
            if len(argv) == 1 and isinstance(argv[0], str) and " " in argv[0]:
                argv = argv[0].split()
            kinds = live_kinds(argv)
            if kinds:
                _STARTED.setdefault(_CURRENT[0], set()).update(kinds)
        original(self, args, *a, **kw)
    subprocess.Popen.__init__ = init


def pytest_configure(config):
    _recording_popen()


def pytest_sessionstart(session):
    """The notebooks nbval executes, built from notebooks/, the fixture runs and the checked
    cells' text (tests/checked_cells.py) before anything is collected."""
    if session.config.option.nbval_lax:
        import checked_cells
        checked_cells.build_all()


# what a shared fixture starts, for every test that asks for it (a session fixture starts it
# for its first test only; the markers must not depend on the order the tests run in)
FIXTURE_KINDS = {"server": ("server",), "tpch_server": ("server",), "lz4_server": ("server",),
                 "smoke_run": ("server", "notebook")}


# the files that take 35 s or more of one worker here (`make test`, 27 Nov 2026), longest first.
# `make test` hands whole files to its two workers in the order they are collected
# (`--dist loadfile --no-loadscope-reorder`): these first, so that the last files the workers
# take are short and neither waits long for the other at the end. A stale list costs time only.
LONGEST_FILES = ["test_notebooks.py", "test_dir_flavours.py", "test_study.py", "test_outside_study.py",
                 "test_flavours.py", "test_sweep.py", "test_own_workload.py", "test_tpcc.py",
                 "test_jupyterlab.py", "test_replication.py", "test_report.py"]


@pytest.hookimpl(tryfirst=True)  # before `-m` selects on the markers
def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.suffix == ".ipynb":  # nbval executes the notebook in a kernel
            item.add_marker(pytest.mark.notebook)
        for fixture, kinds in FIXTURE_KINDS.items():
            if fixture in getattr(item, "fixturenames", ()):
                for kind in kinds:
                    item.add_marker(getattr(pytest.mark, kind))
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file's own order kept


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _CURRENT[0] = item.nodeid


@pytest.fixture(autouse=True)
def _live_tests_carry_their_marker(request):
    """A test fails where it starts a kind of thing its markers do not name: out of `make
    check` is not enough, `-m "not notebook"` must mean what it says too."""
    yield
    started = _STARTED.pop(request.node.nodeid, set())
    missing = sorted(k for k in started if request.node.get_closest_marker(k) is None)
    if missing:
        pytest.fail(f"{request.node.nodeid} " + " and ".join(LIVE[k] for k in missing)
                    + " without its marker: add " + ", ".join(f"@pytest.mark.{k}" for k in missing))
