"""Sweeps: grids expanded and validated before anything starts, runs here one after another
and on a cluster of `dbstudies scheduler` and two `dbstudies worker`s over mutual TLS (each its
own directory, bench=1; strangers refused), run
directories shipped back, a resumed sweep skipping what completed, a worker killed mid-run
(its run abandoned where it was measured, the other completing, no server left), the index."""
import io
import json
import os
import signal
import tarfile

import pytest
from processes import processes_mentioning, wait_for

from dbstudies.store import archive
from dbstudies.store.params import ParamError
from dbstudies.store.results import Run
from dbstudies.workflows import grid, sweep

# the quickest real run there is: thread_pool's smoke profile cut to one step per arm
FAST = {"profile": "smoke", "parameters": {"threads": [1], "repeats": 1, "duration": 2, "warmup": 0}}


def test_a_grid_expands_to_every_combination_with_stable_keys():
    jobs = grid.expand("thread_pool", {**FAST, "grid": {"threads": [[1], [4]], "duration": [2, 3]}})
    assert [(j.parameters["threads"], j.parameters["duration"]) for j in jobs] == \
        [([1], 2), ([1], 3), ([4], 2), ([4], 3)]
    again = grid.expand("thread_pool", {**FAST, "grid": {"threads": [[1], [4]], "duration": [2, 3]}})
    assert [j.key for j in jobs] == [j.key for j in again] and len({j.key for j in jobs}) == 4
    argv = jobs[0].argv(sweep.Path("/r"))
    assert argv[3:] == ["run", "thread_pool", "--profile", "smoke", "-p", "threads", "[1]",
                        "-p", "repeats", "1", "-p", "duration", "2", "-p", "warmup", "0",
                        "--runs-dir", "/r"]


def test_every_bad_run_of_a_grid_is_reported_before_anything_starts():
    with pytest.raises(ParamError) as e:
        grid.expand("thread_pool", {"profile": "smoke", "grid": {"threads": [[1], [0]],
                                                                  "flavour": ["nope"]}})
    text = "\n".join(e.value.problems)
    assert "threads=[0]" in text and "threads: each must be between 1 and" in text
    assert "flavour: unknown server flavour 'nope'" in text
    with pytest.raises(ParamError, match="unknown keys"):
        grid.expand("thread_pool", {"grids": {}})
    with pytest.raises(ParamError, match="threads needs a list of values"):
        grid.expand("thread_pool", {"grid": {"threads": 4}})


def tampered(data: bytes, rel: str) -> bytes:
    """A packed run's bytes with one file's content changed, its manifest kept."""
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as src, tarfile.open(fileobj=out, mode="w:gz") as dst:
        for m in src.getmembers():
            body = src.extractfile(m).read() if m.isfile() else b""
            if m.name.endswith("/" + rel):
                body = body[:-1] + b"\x02"
            m.size = len(body)
            dst.addfile(m, io.BytesIO(body))
    return out.getvalue()


def test_a_run_travels_back_packed_checked_and_never_overwrites(tmp_path):
    src = tmp_path / "a" / "20260101T000000Z-abc"
    (src / "tables").mkdir(parents=True)
    (src / "metadata.json").write_text(json.dumps({"study": "thread_pool", "status": "complete"}))
    (src / "tables" / "x.parquet").write_bytes(b"\x00" * 10)
    (src / "server" / "datadir").mkdir(parents=True)
    (src / "server" / "datadir" / "ibdata1").write_bytes(b"\x01" * 10)  # a server's data never travels
    data = archive.packed(Run(src))
    out = archive.received(data, tmp_path / "b")
    assert out == tmp_path / "b" / src.name and (out / "tables" / "x.parquet").read_bytes() == b"\x00" * 10
    assert not (out / "server" / "datadir").exists()
    with pytest.raises(archive.ArchiveError, match="never overwritten"):
        archive.received(data, tmp_path / "b")
    with pytest.raises(archive.ArchiveError, match="differs from its manifest"):
        archive.received(tampered(data, "tables/x.parquet"), tmp_path / "t")
    with pytest.raises(archive.ArchiveError, match="not a packed run"):
        archive.received(b"no archive", tmp_path / "c")
    running = tmp_path / "r" / "20260101T000000Z-def"
    running.mkdir(parents=True)
    (running / "metadata.json").write_text(json.dumps({"study": "thread_pool", "status": "running"}))
    with pytest.raises(archive.ArchiveError, match="still running"):
        archive.packed(Run(running))


@pytest.mark.notebook
@pytest.mark.server
def test_a_sweep_here_runs_each_job_ctrl_c_stops_it_and_a_second_sweep_skips_what_completed(tmp_path):
    """`dbstudies sweep` here: the first run completes; Ctrl-C during the second run's step
    ends that run cleanly (interrupted, no server left) and starts no more. A second sweep of
    the completed job skips it, its index shows the runs side by side and the run's report
    links back to that index."""
    import subprocess
    import sys

    from conftest import REPO
    spec = {**FAST, "grid": {"duration": [2, 30]}}
    jobs = grid.expand("thread_pool", spec)
    assert [j.parameters["duration"] for j in jobs] == [2, 30]
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(json.dumps(spec))
    p = subprocess.Popen([sys.executable, "-m", "dbstudies", "sweep", "thread_pool", "--grid", str(grid_file),
                          "--runs-dir", str(tmp_path / "runs"), "--sweeps-dir", str(tmp_path / "sweeps")],
                         cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def run_of(job):
        for f in (tmp_path / "runs" / "thread_pool").glob("*/sweep.json"):
            if json.loads(f.read_text())["key"] == job.key:
                return f.parent
        return None

    second = wait_for(lambda: run_of(jobs[1]), 180, "the second run")
    wait_for(lambda: processes_mentioning(str(second)), 60, "its server")
    # a step under way (its first streamed second), not some seconds of sleep
    wait_for(lambda: (Run.open(second).progress() or {}).get("now", "").startswith("r1 "), 120,
             "a step under way")
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 130, out
    first = Run.open(run_of(jobs[0]))
    assert first.status == "complete" and (first.path / "report.html").exists()
    assert Run.open(second).status == "interrupted"
    assert len(list((tmp_path / "runs" / "thread_pool").glob("*"))) == 2  # no third run
    assert "1 interrupted" in out and "1 complete" in out and not processes_mentioning(str(second))
    (first_sweep,) = [d.name for d in (tmp_path / "sweeps").iterdir() if (d / "index.html").exists()]
    again = sweep.Sweep("thread_pool", jobs[:1], tmp_path / "runs", tmp_path / "sweeps", id="second",
                        say=lambda m: None)
    again.run_here()
    assert again.records[0]["skipped"] and again.records[0]["run_dir"] == str(first.path)
    page = again.index().read_text()
    assert "report.html" in page and "(earlier)" in page and "**" not in page
    assert again.records[0]["host"] == first.metadata["host"]["hostname"]
    # the runs side by side, and each report links back to the index
    table = again.combined()
    assert table[["run", "threads", "steps"]].drop_duplicates().values.tolist() == [[jobs[0].label, 1, 1]]
    assert set(table["arm"]) == {"one-thread-per-connection", "pool-of-threads"} and (table["qps_median"] > 0).all()
    assert "The runs side by side" in page and "<img src='figures/qps.png'" in page
    assert json.loads((again.path / "figures" / "qps.json").read_text())["problems"] == []
    report = (first.path / "report.html").read_text()
    assert (f"<th>sweep</th><td>{first_sweep} — <a href='../../../sweeps/second/index.html'>the index of "
            "sweep second: every run side by side</a>") in report


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def background() -> None:  # what bash does to `cmd &` in a script
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.fixture
def cluster(tmp_path):
    """The documented commands on the loopback: `dbstudies scheduler` (mutual TLS, its
    certificates made in tmp_path/tls) and two `dbstudies worker`s, each its own directory and
    one `bench`; all three started with SIGINT ignored, as a background job of a shell script is,
    and each ended by SIGINT (a state, not a time). Yields (access, client)."""
    import subprocess
    import sys

    from conftest import REPO
    from distributed import Client

    from dbstudies.workflows import cluster as C
    port, tls = free_port(), tmp_path / "tls"
    cmd = [sys.executable, "-m", "dbstudies"]
    log = open(tmp_path / "cluster.log", "w")
    procs = [subprocess.Popen([*cmd, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--tls-dir", str(tls)],
                              cwd=REPO, preexec_fn=background, stdout=log, stderr=subprocess.STDOUT)]
    try:
        wait_for(lambda: (tls / C.MEMBER).exists() or procs[0].poll() is not None, 60, "the certificates")
        way = C.access(f"tls://127.0.0.1:{port}", tls_dir=tls)
        for name in ("w1", "w2"):
            procs.append(subprocess.Popen([*cmd, "worker", way.address, "--tls-dir", str(tls), "--name", name,
                                           "--local-directory", str(tmp_path / name)], cwd=REPO,
                                          preexec_fn=background, stdout=log, stderr=subprocess.STDOUT))
        with Client(way.address, timeout=60, security=way.security()) as client:
            client.wait_for_workers(2, timeout=120)
            yield way, client
        for p in reversed(procs):  # workers, then scheduler: each ends on SIGINT
            p.send_signal(signal.SIGINT)
            p.wait(60)  # TimeoutExpired fails the test: SIGINT did not end it
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        log.close()


def test_a_cluster_admits_only_members_of_its_authority(cluster, tmp_path):
    """What `dbstudies scheduler` made: the folder and every file its own (0700/0600); its
    workers one task slot and bench=1 each, the scheduler never retrying a run a dead worker
    abandoned; a client without a certificate, with another authority's, or over plain TCP is
    refused; plain TCP is refused off the loopback and without --insecure."""
    import socket
    import ssl
    import stat

    from distributed import Client

    from dbstudies.workflows import cluster as C
    way, client = cluster
    assert stat.S_IMODE(way.tls_dir.stat().st_mode) == 0o700
    assert {f.name: stat.S_IMODE(f.stat().st_mode) for f in way.tls_dir.iterdir()} == \
        {C.CA: 0o600, C.CA_KEY: 0o600, C.MEMBER: 0o600}
    workers = client.scheduler_info()["workers"]
    assert [(w["resources"], w["nthreads"]) for w in workers.values()] == [({"bench": 1}, 1)] * 2
    assert all(a.startswith("tls://") for a in workers)
    assert client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.allowed_failures) == 0
    assert client.submit(lambda: 6 * 7, resources={"bench": 1}).result(timeout=60) == 42  # a member runs a task
    host, port = "127.0.0.1", int(way.address.rsplit(":", 1)[1])
    # a TLS client that shows no certificate: the scheduler ends the handshake
    bare = ssl.create_default_context(cafile=str(way.tls_dir / C.CA))
    bare.check_hostname = False
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        with socket.create_connection((host, port), timeout=10) as raw, bare.wrap_socket(raw) as tls:
            tls.sendall(b"x")
            assert tls.recv(1) == b""  # TLS 1.3 sends the refusal after the handshake
            raise ConnectionError("closed by the scheduler")
    # another authority's member certificate, and plain TCP
    stranger = C.Access(way.address, C.ensure(tmp_path / "stranger"))
    for address, security in ((way.address, stranger.security()), (f"tcp://{host}:{port}", None)):
        with pytest.raises(OSError):
            Client(address, timeout=5, security=security)
    with pytest.raises(ParamError, match="plain TCP"):
        C.access(f"tcp://{host}:{port}")
    with pytest.raises(ParamError, match="only the loopback"):
        C.access(f"tcp://10.0.0.1:{port}", insecure=True)
    with pytest.raises(ParamError, match="no ca.pem or member.pem"):
        C.access(way.address, tls_dir=tmp_path / "nothing")
    # made once: a second scheduler start keeps the authority
    before = (way.tls_dir / C.CA).read_bytes()
    assert C.ensure(way.tls_dir) == way.tls_dir and (way.tls_dir / C.CA).read_bytes() == before


@pytest.mark.server
def test_a_sweep_on_two_dask_workers_abandons_a_killed_workers_run_and_ships_the_other_back(cluster, tmp_path):
    """Two runs, one per worker at once (bench=1 each), over the cluster's TLS: the worker of
    the first is killed mid-run — that run is abandoned where it was measured, its servers
    gone —, the other completes on the other worker and comes back to this machine with its report."""
    import threading

    from distributed import Variable
    way, client = cluster
    dirs = client.run(lambda dask_worker: str(sweep.worker_runs_dir(dask_worker)))
    assert len(set(dirs.values())) == 2  # each worker its own directory
    pids = client.run(os.getpid)
    jobs = grid.expand("thread_pool", {**FAST, "grid": {"seed": [3, 4]}})
    s = sweep.Sweep("thread_pool", jobs, tmp_path / "runs", tmp_path / "sweeps", say=lambda m: None)
    t = threading.Thread(target=s.run_on, args=(way,))
    t.start()
    victim = Variable(sweep.WHERE_VARIABLE.format(key=jobs[0].key), client=client)
    where = victim.get(timeout=120).split(":", 1)[1]
    worker = next(a for a, d in dirs.items() if where.startswith(d))
    wait_for(lambda: processes_mentioning(where), 60, "the victim's server")
    os.kill(pids[worker], signal.SIGKILL)
    t.join(600)
    by_key = {r["key"]: r for r in s.records}
    dead, alive = by_key[jobs[0].key], by_key[jobs[1].key]
    assert dead["status"] == "abandoned" and dead["kept_at"].endswith(where) and dead["run_dir"] is None
    assert "KilledWorker" in dead["error"] or "died" in dead["error"].lower()
    # what it measured stays where it was measured; its servers went with it
    wait_for(lambda: not processes_mentioning(where), 120, "the abandoned run's servers to stop")
    assert (sweep.Path(where) / "metadata.json").exists()
    # the other ran on the other worker, and is back on this machine
    assert alive["status"] == "complete"
    other = next(d for d in dirs.values() if not where.startswith(d))
    assert alive["kept_at"].split(":", 1)[1].startswith(other)
    run = Run.open(alive["run_dir"])
    assert run.status == "complete" and run.path.parent == tmp_path / "runs" / "thread_pool"
    assert (run.path / "report.html").exists() and (run.path / "tables").exists()
    assert s.combined()["run"].unique().tolist() == ["seed=4"]  # named by what was swept
    assert "1 abandoned" in s.summary() and "1 complete" in s.summary()
    page = s.index().read_text()
    assert page.count("report.html") == 1 and "1 complete" in page and "1 abandoned" in page


def test_a_latency_sweep_shows_each_offered_level_side_by_side(tmp_path):
    """The latency study's runs side by side: per workload × level (a fraction of the peak,
    the same panel whatever each run's peak), the open-loop p99 — none where a level was
    not sustained — not the closed-loop peak phase's."""
    from conftest import FIXTURES
    (fixture,) = (FIXTURES / "runs" / "latency").iterdir()
    jobs = grid.expand("latency", {"profile": "smoke", "grid": {"arrivals": ["poisson", "constant"]}})
    s = sweep.Sweep("latency", jobs, tmp_path / "runs", tmp_path / "sweeps", id="l", say=lambda m: None)
    s.records = [{"key": j.key, "label": j.label, "status": "complete", "run_dir": str(fixture)}
                 for j in jobs]
    table = s.combined()
    assert table["workload"].unique().tolist() == ["oltp_point_select at 30 % of peak",
                                                   "oltp_point_select at 150 % of peak"]
    assert table["arm"].iloc[0] == "one-thread-per-connection"  # the baseline's colour first
    assert table["run"].unique().tolist() == ['arrivals="poisson"', 'arrivals="constant"']
    over = table[table["workload"].str.contains("150 %")]
    assert over["p99_ms_median"].isna().all() and table["p99_ms_median"].notna().sum() == 4
    page = s.index().read_text()
    assert "oltp_point_select at 30 % of peak" in page
