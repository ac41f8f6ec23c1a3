"""The test tiers, as a pytest plugin (imported by conftest): every test that starts a
server, a Jupyter kernel or a browser carries that marker (`make check` deselects them), or
fails; the shared fixtures' kinds are added to the tests that ask for them; and whole files
go to `make test`'s workers longest first."""
from __future__ import annotations

import os
import subprocess

import pytest

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


# what a shared fixture starts, for every test that asks for it (a session fixture starts it
# for its first test only; the markers must not depend on the order the tests run in)
FIXTURE_KINDS = {"server": ("server",), "tpch_server": ("server",), "lz4_server": ("server",),
                 "smoke_run": ("server", "notebook")}


# the files that take 30 s or more of one worker here (`make test` from a fresh clone, 28 Nov
# 2026), longest first. `make test` hands whole files to its workers in the order they are
# collected (`--dist loadfile --no-loadscope-reorder`): these first, so that the last files the
# workers take are short and none waits long for the others at the end. A stale list costs time only.
LONGEST_FILES = ["test_notebooks.py", "test_dir_flavours.py", "test_jupyterlab.py", "test_sweep.py",
                 "test_study.py", "test_flavours.py", "test_report.py", "test_tpcc.py", "test_outside_study.py",
                 "test_own_workload.py", "test_replication.py"]


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
