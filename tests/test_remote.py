"""Remote targets: a study run against a server dbstudies does not start — here a private
server the test starts on loopback, with a password user — never writes the password
anywhere (metadata, tables, notebook, report, logs, argv), and arms that would need a
restart or a config change are refused before anything is measured."""
import os
import secrets
import subprocess
import sys

import pytest
from conftest import REPO

from dbstudies import servers
from dbstudies.kit.study import load
from dbstudies.measure import checks
from dbstudies.store import results
from dbstudies.store.params import ParamError
from dbstudies.store.results import Run

ENV = "DBSTUDIES_TEST_REMOTE_PASSWORD"


@pytest.fixture(scope="module")
def remote(flavour, tmp_path_factory):
    """(flavour file, password): a private server reached as a remote one, over TCP."""
    where = tmp_path_factory.mktemp("remote")
    password = "pw-" + secrets.token_hex(12)
    with servers.Server(flavour, where / "srv", max_clients=32) as s:
        s.start()
        s.query(f"CREATE USER 'bench'@'127.0.0.1' IDENTIFIED BY '{password}'")
        s.query("GRANT ALL ON *.* TO 'bench'@'127.0.0.1'")
        toml = where / "test-remote.toml"
        toml.write_text(f'name = "test-remote"\nfamily = "mariadb"\ndescription = "a test\'s '
                        f'server, reached over TCP"\nsource = "remote"\nhost = "127.0.0.1"\n'
                        f'port = {s.port}\nclient_user = "bench"\npassword_env = "{ENV}"\nthread_pool = true\n')
        os.environ[ENV] = password
        try:
            yield toml, password
        finally:
            os.environ.pop(ENV, None)


@pytest.mark.server
def test_arms_that_need_a_restart_are_refused_before_measuring(remote):
    toml, _ = remote
    with pytest.raises(ParamError) as e:
        checks.resolve(load("thread_pool"), "smoke", flavour=str(toml), flavours=[str(toml)])
    text = "\n".join(e.value.problems)
    assert "pool-of-threads: needs a server start with thread_pool" in text
    assert "test-remote is a remote server dbstudies does not restart or reconfigure" in text
    with pytest.raises(ParamError, match="one-thread-per-connection: needs a server start with thread_pool"):
        checks.resolve(load("latency"), "smoke", flavour=str(toml), flavours=[str(toml)])
    with pytest.raises(ParamError, match="needs a server start with innodb_flush_log_at_trx_commit"):
        checks.resolve(load("checkpoint_stalls"), "smoke", flavour=str(toml), configs={"as is": {}})
    with pytest.raises(ParamError, match="cold: cold executions restart test-remote"):
        checks.resolve(load("dbt3_plans"), "smoke", flavour=str(toml), candidates={"as is": {}}, cold=True)
    wrong = toml.with_name("test-remote.toml").read_text().replace(ENV, ENV + "_UNSET")
    bad = toml.parent / "bad" / "test-remote.toml"
    bad.parent.mkdir(exist_ok=True)
    bad.write_text(wrong)
    with pytest.raises(ParamError, match=f"the environment variable {ENV}_UNSET .* is not set"):
        checks.resolve(load("checkpoint_stalls"), "smoke", flavour=str(bad), configs={"as is": {}}, settings={})


@pytest.mark.notebook
@pytest.mark.server
def test_a_smoke_study_on_a_remote_target_never_writes_its_password(remote, tmp_path):
    toml, password = remote
    # the latency study, as a remote target is measured: one named configuration, "as is"
    # (its closed-loop peak and offered-load steps give sysbench the password by option file)
    argv = [sys.executable, "-m", "dbstudies", "run", "latency", "--profile", "smoke",
            "-p", "flavour", str(toml), "-p", "flavours", f'["{toml}"]', "-p", "configs", '{"as is": {}}',
            "-p", "repeats", "1", "--runs-dir", str(tmp_path / "runs")]
    secrets_before = {p for p in os.listdir("/tmp") if p.startswith("dbs-remote-")}
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=REPO,
                       env={**os.environ, ENV: password})
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert password not in p.stdout + p.stderr
    (run_dir,) = [m.parent for m in (tmp_path / "runs").glob("*/*/metadata.json")]
    run = Run.open(run_dir)
    assert run.status == "complete"
    (srv,) = [s for s in run.metadata["servers"] if s["label"] == "as is"]
    assert srv["remote"] and srv["password_from"] == f"environment variable {ENV}"
    calls = run.metadata["sysbench"]["calls"]
    assert calls and all(any(a.startswith("--config-file=") for a in c["argv"]) for c in calls)
    assert not any("--mysql-password" in a for c in calls for a in c["argv"])
    files = [f for f in run_dir.rglob("*") if f.is_file()]
    assert len(files) > 10
    leaked = [f for f in files if password.encode() in f.read_bytes()]
    assert leaked == []
    # sysbench's option file (the only copy on disk) is gone with the run
    assert {p for p in os.listdir("/tmp") if p.startswith("dbs-remote-")} == secrets_before
    assert (run_dir / "report.html").exists()
    from dbstudies.studies.latency import levels as latency
    closed, loaded = latency.split(run)  # one closed-loop step, then the two levels open-loop
    assert len(closed) == 1 and sorted(loaded["load"]) == [0.3, 1.5]
    # on loopback the server's process is found: its CPU is the server's, not "other load"
    # that would mark every step busy and measure it three times
    assert srv["pid"] and (results.measured(run)["cpu_server_pct"] > 0).all()


def test_the_password_comes_from_the_environment_or_an_option_file(tmp_path, monkeypatch):
    from dbstudies.servers import remote
    base = dict(name="r", family="mariadb", description="d", source="remote", host="h", port=1)
    f = servers.Flavour(**base, password_env="DBSTUDIES_TEST_PW")
    monkeypatch.setenv("DBSTUDIES_TEST_PW", "from-env")
    assert remote.password(f) == "from-env"
    monkeypatch.delenv("DBSTUDIES_TEST_PW")
    with pytest.raises(servers.ServerError, match="DBSTUDIES_TEST_PW .* is not set"):
        remote.password(f)
    cnf = tmp_path / "my.cnf"
    cnf.write_text("[mysqld]\nport=1\n[client]\nuser=bench\npassword='from file'\n")
    assert remote.password(servers.Flavour(**base, option_file=str(cnf))) == "from file"
    with pytest.raises(servers.ServerError, match="cannot read its option file") as e:
        remote.password(servers.Flavour(**base, option_file=str(tmp_path / "missing.cnf")))
    assert "from file" not in str(e.value)
    toml = tmp_path / "r.toml"
    toml.write_text('name = "r"\nfamily = "mariadb"\ndescription = "d"\nsource = "remote"\n'
                    'host = "h"\nport = 1\npassword_env = "A"\noption_file = "B"\n')
    with pytest.raises(ValueError, match="password_env or option_file, not both"):
        servers.load_flavour(str(toml))


def test_a_private_and_a_remote_server_offer_the_same_calls():
    """`servers.Target`: what the measurement loop calls, implemented by both classes with
    the same parameters (a remote one refuses what it cannot do at run time)."""
    import inspect

    from dbstudies.servers.factory import Target
    from dbstudies.servers.instance import Server
    from dbstudies.servers.remote import RemoteServer
    calls = [n for n, v in vars(Target).items() if callable(v) and not n.startswith("_")]
    assert {"start", "stop", "restart", "cold_restart", "query", "connect"} <= set(calls)
    for name in calls:
        wanted = [p for p in inspect.signature(getattr(Target, name)).parameters if p != "self"]
        for cls in (Server, RemoteServer):
            have = inspect.signature(getattr(cls, name)).parameters
            assert set(wanted) <= set(have) or any(p.kind == p.VAR_KEYWORD for p in have.values()), \
                (cls.__name__, name, wanted, list(have))
