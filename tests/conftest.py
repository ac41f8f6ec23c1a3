"""Shared fixtures. Server tests start real private MariaDB servers (never mocks). What the
tests share besides fixtures lives in modules of its own: `processes` (commands, waits,
leftover processes), `report_checks` (what a reader checks in a report), `tiers` (the markers
of live tests and the workers' file order: a plugin, its hooks imported here),
`checked_cells` (the notebooks nbval executes)."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from processes import processes_mentioning
from tiers import (  # noqa: F401 — the tiers plugin's hooks and fixture, registered by being here
    _live_tests_carry_their_marker,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_runtest_setup,
)

from dbstudies import servers
from dbstudies.core import paths
from dbstudies.kit import study as registry

# the study of your own is measured through the CLI, from a copy outside the repository
# (test_outside_study); nbval must not execute its notebook in place as a test notebook
collect_ignore_glob = ["fixtures/outside_study/*.ipynb"]

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"


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


# study → the `dbstudies run` arguments of its notebook's one execution in the suite, where
# they are not the smoke profile's (a new study runs its smoke profile without being named
# here). The thread-pool one is the README's example.
SMOKE = ["--profile", "smoke"]
# 2-s steps: the positive control's pauses at 0.5 and 1.5 s (its first may fall while 64 threads
# still connect on the one CPU a smoke run has; at 1-s steps a step then had no pause to see)
SMOKE_RUNS = {"thread_pool": ["--profile", "smoke", "-p", "threads", "[1,64]",
                                    "-p", "duration", "2", "-p", "cpu_profile", "true",
                                    "-p", "positive_control", '{"pause_ms": 200, "every_s": 1}']}


NOTEBOOKS = sorted(p.name for p in paths.NOTEBOOKS_DIR.glob("*.ipynb"))  # the built-in studies' (faces share one)
STUDIES = registry.names()
# the order their smoke runs execute in: the README's first (the longest, and the one a test in
# another file, on the other worker, waits for), the others as they sort
SMOKE_ORDER = sorted(STUDIES, key=lambda name: (name not in SMOKE_RUNS, name))


def smoke_argv(name: str) -> list[str]:
    return SMOKE_RUNS.get(name, SMOKE)


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """Execute a study's notebook once per test session, through the CLI (`dbstudies run`, which
    executes it with papermill and renders the report): study → (completed process, run
    directory). Once for all of `pytest -n 3`'s workers too: the first to ask runs it under a
    lock in their shared temporary directory, the others wait on that lock and read what it kept."""
    import fcntl
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # pytest-N/, above each worker's popen-gwK/
    done: dict[str, tuple] = {}

    def execute(name: str):
        if name not in done:
            stem = name
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


def pytest_sessionstart(session):
    """The notebooks nbval executes, built from notebooks/, the fixture runs and the checked
    cells' text (tests/checked_cells.py) before anything is collected."""
    if session.config.option.nbval_lax:
        import checked_cells
        checked_cells.build_all()
