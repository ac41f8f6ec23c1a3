"""A real private MariaDB: start, stop, restart, cold restart, failures, cleanup."""
import shutil
import subprocess
import sys

import pytest
from processes import processes_mentioning

from dbstudies import servers

pytestmark = pytest.mark.server


def test_start_answers_on_socket_and_loopback_port(server):
    assert server.version.startswith("10.11.")
    assert server.running and server.pid
    v = dict(server.query("SHOW GLOBAL VARIABLES WHERE Variable_name IN "
                          "('port','bind_address','datadir','socket','tmpdir','innodb_buffer_pool_size')"))
    assert int(v["port"]) == server.port != 3306
    assert v["bind_address"] == "127.0.0.1"
    assert v["datadir"].rstrip("/") == str(server.datadir)
    assert v["socket"] == str(server.socket)
    assert v["tmpdir"] == str(server.socket.parent)  # private: never a /tmp shared with others
    assert int(v["innodb_buffer_pool_size"]) == 2 * 2**30  # from env/cnf/base.cnf
    import mysql.connector
    with mysql.connector.connect(host="127.0.0.1", port=server.port, user="root") as c:
        assert c.is_connected()
    assert server.error_log.exists() and "ready for connections" in server.error_log.read_text()
    # what a run records of it: the AIO InnoDB says it uses (this machine allows io_uring), the kernel's say
    from dbstudies.store import provenance
    allowed = provenance.kernel_knobs()["io_uring_disabled"] == 0
    assert server.describe()["aio"] == ("io_uring" if allowed else "Linux native AIO")


def test_restart_applies_new_settings_and_cold_restart(server):
    server.restart({"thread_handling": "pool-of-threads", "thread_pool_size": 3})
    assert server.query("SELECT @@thread_handling, @@thread_pool_size") == [("pool-of-threads", 3)]
    first_pid = server.pid
    dropped = server.cold_restart()
    assert server.pid != first_pid
    assert server.query("SELECT @@innodb_buffer_pool_load_at_startup") == [(0,)]
    # the settings of one start never stick to the next
    assert server.query("SELECT @@thread_handling") == [("one-thread-per-connection",)]
    assert "thread_pool_size" not in server.cnf_path.read_text()
    assert dropped == (open("/proc/sys/vm/drop_caches", "a") is not None)
    server.restart()
    assert server.query("SELECT @@innodb_buffer_pool_load_at_startup") == [(1,)]  # cold was one-off
    kinds = [e["event"] for e in server.events]
    assert kinds == ["init", "start", "stop", "start", "stop", "start", "stop", "start"]


def test_max_connections_raised_for_many_clients(flavour, tmp_path):
    with servers.Server(flavour, tmp_path / "s", max_clients=1000) as s:
        s.start()
        assert s.query("SELECT @@max_connections")[0][0] == 1000 + servers.CONNECTION_HEADROOM


def test_stop_leaves_no_process_and_keeps_error_log(flavour, tmp_path):
    s = servers.Server(flavour, tmp_path / "s", log_dir=tmp_path / "logs")
    s.start()
    pid = s.pid
    s.close()
    assert not s.running and processes_mentioning(str(tmp_path / "s")) == []
    assert not (tmp_path / "s" / "server.pid").exists()
    assert "Shutdown complete" in (tmp_path / "logs" / "mariadb-10.11.err").read_text()
    assert pid not in processes_mentioning("mariadbd")


def test_bad_setting_fails_init_and_start_with_the_servers_error(flavour, tmp_path):
    with servers.Server(flavour, tmp_path / "a", settings={"no_such_option": 1}) as s:
        with pytest.raises(servers.ServerError, match="install-db failed.*\n.*unknown variable 'no_such_option=1'"):
            s.start()
    with servers.Server(flavour, tmp_path / "b") as s:
        s.start()
        s.stop()
        with pytest.raises(servers.ServerDied, match="(?s)during start-up.*unknown variable 'no_such_option=1'"):
            s.start({"no_such_option": 1})
        assert not s.running
    assert processes_mentioning(str(tmp_path)) == []


def test_context_manager_stops_server_on_exception(flavour, tmp_path):
    with pytest.raises(ZeroDivisionError):
        with servers.Server(flavour, tmp_path / "s") as s:
            s.start()
            raise ZeroDivisionError("the block fails")
    assert processes_mentioning(str(tmp_path / "s")) == []


def test_server_dies_with_its_python_process(tmp_path):
    """Even if Python is killed outright (no atexit), the server gets SIGTERM and exits."""
    code = (f"from dbstudies import servers\n"
            f"s = servers.Server(servers.load_flavour('mariadb-10.11'), {str(tmp_path / 's')!r})\n"
            f"s.start(); print(s.pid, s.socket.parent, flush=True)\n"
            f"import os, signal; os.kill(os.getpid(), signal.SIGKILL)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    pid, sockdir = p.stdout.split()
    assert p.returncode == -9 and pid.isdigit()
    from processes import wait_for
    wait_for(lambda: processes_mentioning(str(tmp_path / "s")) == [], 30, "mariadbd to exit")
    shutil.rmtree(sockdir)  # what a killed Python leaves (`dbstudies clean` does this for runs)


def test_server_refuses_busy_port(server, flavour, tmp_path):
    with pytest.raises(servers.PortInUse):
        servers.Server(flavour, tmp_path / "other", port=server.port)


def test_check_alive_reports_a_killed_server(server):
    import os
    import signal
    os.kill(server.pid, signal.SIGKILL)
    server._proc.wait(10)
    with pytest.raises(servers.ServerDied, match="died during the test .exit code -9."):
        server.check_alive(during="the test")


def test_a_query_to_a_killed_server_says_the_server_died(server):
    """…not the client library's "Can't connect through socket" (a real kill between steps
    ended a run with that)."""
    import os
    import signal
    os.kill(server.pid, signal.SIGKILL)
    server._proc.wait(10)
    with pytest.raises(servers.ServerDied, match=r"died during a query \(SHOW\) \(exit code -9\)"):
        server.query("SHOW GLOBAL STATUS")
