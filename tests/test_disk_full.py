"""A fault the other tests do not try: the disk under a run fills up while it measures. The run
ends in one line, keeps the steps it finished (readable), leaves no server behind, and its
report says where it stopped. The disk is a small tmpfs of the test's own (root mounts it, as
the suite runs here); the fill comes while the measuring kernel is held (SIGSTOP), so it always
lands mid-run, whatever the host's speed."""
import contextlib
import html
import shutil
import signal
import subprocess
import sys

import pandas as pd
import psutil
import pytest
from processes import processes_mentioning, wait_for

from dbstudies.store.results import RESERVE, Run

# small servers (short redo logs) on a 1 GiB disk, far more than the run needs until the fill (the
# run's servers and data took 400 MiB on a loaded host once); six measured steps, the fill after the first
ARGV = ["run", "thread_pool", "--profile", "smoke", "-p", "threads", "[1]", "-p", "repeats", "3",
        "-p", "duration", "2", "-p", "settings", '{"innodb_log_file_size": "32M"}']


def measured(runs) -> int:
    n = 0
    for part in runs.glob("*/*/tables/steps/part-*.parquet"):
        with contextlib.suppress(Exception):  # a part being written
            n += int((pd.read_parquet(part)["phase"] == "measure").sum())
    return n


def fill(disk) -> None:
    """Write to `disk` until it is full."""
    with contextlib.suppress(OSError), open(disk / "filler", "wb") as f:
        while True:
            f.write(b"\0" * (1 << 20))
            f.flush()


@pytest.mark.server
@pytest.mark.notebook
def test_a_run_whose_disk_fills_ends_in_one_line_with_its_steps_kept(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1g", "tmpfs", str(disk)], check=True)
    p = None
    try:
        with open(tmp_path / "stdout.txt", "w") as out, open(tmp_path / "stderr.txt", "w") as err:
            p = subprocess.Popen([sys.executable, "-m", "dbstudies", *ARGV, "--runs-dir", str(disk / "runs")],
                                 stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
            wait_for(lambda: measured(disk / "runs") >= 1 or p.poll() is not None, 600, "a measured step")
            assert p.poll() is None, (tmp_path / "stderr.txt").read_text()[-3000:]
            kernels = [c for c in psutil.Process(p.pid).children(recursive=True) if "ipykernel" in " ".join(c.cmdline())]
            assert kernels
            for k in kernels:
                k.send_signal(signal.SIGSTOP)
            try:
                kept = measured(disk / "runs")
                print("before the fill:", shutil.disk_usage(disk), "used by the run:",
                      subprocess.run(["du", "-sm", str(disk / "runs")], capture_output=True, text=True).stdout)
                fill(disk)
            finally:
                for k in kernels:
                    k.send_signal(signal.SIGCONT)
            code = p.wait(600)
        said = (tmp_path / "stderr.txt").read_text().splitlines()
        assert code == 1, "\n".join(said[-30:])
        (run_dir,) = [m.parent for m in (disk / "runs").glob("*/*/metadata.json")]
        run = Run(run_dir)
        # one line, then the terminal goes on with what it does for any failed run
        (i,) = [n for n, line in enumerate(said) if line.startswith("dbstudies: the study failed:")]
        assert said[i] == f"dbstudies: the study failed: the disk under {run_dir.parent} is full (No space left on device)"
        assert said[i + 1].startswith("dbstudies: ")
        # the steps it finished, readable; the whole error in its record; its room given back
        assert run.status == "failed" and run.metadata["error"].splitlines()[0] == \
            "the disk under the run's directory is full (No space left on device)"  # no machine path in a record
        steps = run.table("steps")
        assert (steps["phase"] == "measure").sum() >= kept >= 1
        assert not (run_dir / RESERVE).exists()
        # no server left; where it stopped, in the report (written once the servers' datadirs went)
        wait_for(lambda: not processes_mentioning(str(run_dir)), 60, "the run's servers to stop")
        page = html.unescape((run_dir / "report.html").read_text())
        assert "Run failed</b>: the disk under the run's directory is full (No space left on device)" in page
        assert str(disk) not in page
        assert f"It measured {(steps['phase'] == 'measure').sum()} of 6 planned steps" in page
    finally:
        if p is not None and p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                import os
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        subprocess.run(["umount", "-l", str(disk)], check=False)
