"""The committed fixture runs keep what the analysis reads and read as a diff (issue 53):
slimmed by tests/slim_fixture.py, whose outputs — the reports of the quick runs, the
notebooks' checked cells, every metadata formatter — were the same before and after."""
from __future__ import annotations

import json
import subprocess

import slim_fixture
from conftest import FIXTURES, REPO

MAX_LINES = 20_000
SLIMMED = [*FIXTURES.glob("runs/*/*"), *FIXTURES.glob("quick/*/*"), *FIXTURES.glob("make_study/*/*")]


def test_committed_fixture_text_stays_small():
    files = subprocess.run(["git", "ls-files", "tests/fixtures"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    text = [f for f in files if not f.endswith(".parquet") and "\0" not in (REPO / f).read_text(errors="replace")]
    lines = sum(len((REPO / f).read_text(errors="replace").splitlines()) for f in text)
    assert 1000 < lines <= MAX_LINES, lines


def test_every_fixture_run_is_slim_already(tmp_path):
    """Slimming a committed fixture again changes nothing: a fixture added or re-recorded
    without `python tests/slim_fixture.py RUN` fails here."""
    keep = slim_fixture.named_in_library()
    assert SLIMMED
    for run in SLIMMED:
        meta = json.loads((run / "metadata.json").read_text())
        slim_fixture.slim_calls(meta)
        slim_fixture.slim_variables(meta.get("servers") or [], keep)
        assert slim_fixture.dumps(meta) + "\n" == (run / "metadata.json").read_text(), run


def test_slimming_keeps_what_the_client_command_shows():
    calls = [{"command": "prepare", "workload": "w", "argv": ["sysbench", "w", "prepare"]}]
    calls += [{"command": "run", "workload": "w", "env": {},
               "argv": ["sysbench", "w", f"--threads={t}", f"--rand-seed={s}", f"--time={d}"]}
              for d, t, s in [(1, 8, 0), (3, 1, 1), (3, 8, 2), (3, 64, 3), (3, 1, 4), (3, 8, 5), (3, 64, 6)]]
    meta = {"parameters": {"duration": 3}, "sysbench": {"calls": calls}}
    slim_fixture.slim_calls(meta)
    kept = meta["sysbench"]["calls"]
    assert kept[0]["command"] == "prepare" and [c["argv"][2] for c in kept[1:]] == [
        "--threads=1", "--threads=8", "--threads=64"]  # every thread count, two seeds at least; no warm-up
    servers = [{"global_variables": {"a": "1", "b": "x", "c": "same"}},
               {"global_variables": {"a": "1", "b": "y", "c": "same"}}]
    slim_fixture.slim_variables(servers, {"a"})  # a: named by the library; b: differs; c: neither
    assert [s["global_variables"] for s in servers] == [{"a": "1", "b": "x"}, {"a": "1", "b": "y"}]
