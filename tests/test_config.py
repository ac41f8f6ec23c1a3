"""my.cnf rendering, flavours, ports and the argv built for the server and sysbench."""
import os
import socket
from pathlib import Path

import pytest

from dbstudies import servers, workloads
from dbstudies.workloads import sysbench


def make_server(flavour, tmp_path, **kw):
    return servers.Server(flavour, tmp_path / "srv", **kw)


def test_read_cnf_bare_repeated_and_comments(tmp_path):
    f = tmp_path / "a.cnf"
    f.write_text("[mysqld]\n# comment\nskip-name-resolve\ninnodb-buffer-pool-size = 1G  # inline\n"
                 "plugin_load_add=provider_lz4\nplugin-load-add=provider_snappy\n")
    assert servers.read_cnf(f) == {"skip_name_resolve": None, "innodb_buffer_pool_size": "1G",
                                   "plugin_load_add": ["provider_lz4", "provider_snappy"]}
    f.write_text("[client]\nuser=x\n")
    with pytest.raises(ValueError, match="only a \\[mysqld\\] section"):
        servers.read_cnf(f)


def test_render_cnf():
    text = servers.render_cnf({"skip_name_resolve": None, "port": 1234, "performance_schema": False,
                               "plugin_load_add": ["a", "b"]})
    assert text == ("[mysqld]\nskip_name_resolve\nport=1234\nperformance_schema=OFF\n"
                    "plugin_load_add=a\nplugin_load_add=b\n")


def test_effective_settings_layers(flavour, tmp_path):
    s = make_server(flavour, tmp_path, settings={"innodb-buffer-pool-size": "3G", "port": 1,
                                                 "datadir": "/var/lib/mysql"})
    eff = s.effective_settings()
    assert eff["innodb_buffer_pool_size"] == "3G"           # override beats base.cnf (2G)
    assert eff["performance_schema"] == "OFF"               # from base.cnf
    assert eff["datadir"] == str(s.datadir)                 # private paths always win
    assert eff["port"] == s.port != 3306
    assert eff["bind_address"] == "127.0.0.1"
    assert eff["log_error"] == str(s.error_log)
    if os.geteuid() == 0:
        assert eff["user"] == "root"


def test_max_connections_covers_largest_thread_count(flavour, tmp_path):
    assert make_server(flavour, tmp_path).effective_settings()["max_connections"] == 151
    big = make_server(flavour, tmp_path, max_clients=4096).effective_settings()
    assert big["max_connections"] == 4096 + servers.CONNECTION_HEADROOM
    user = make_server(flavour, tmp_path, max_clients=10, settings={"max_connections": 5000})
    assert user.effective_settings()["max_connections"] == 5000


def test_server_argv_defaults_file_first_and_pinning(flavour, tmp_path):
    s = make_server(flavour, tmp_path)
    assert s.server_argv() == ["/usr/sbin/mariadbd", f"--defaults-file={s.cnf_path}"]
    pinned = make_server(flavour, tmp_path, cpus="0")
    assert pinned.server_argv()[:3] == ["taskset", "-c", "0"]
    assert pinned.server_argv()[4] == f"--defaults-file={pinned.cnf_path}"
    assert s.install_db_argv() == ["/usr/bin/mariadb-install-db", f"--defaults-file={s.cnf_path}",
                                   "--auth-root-authentication-method=normal", "--skip-test-db"]


def test_socket_path_is_short_enough(flavour, tmp_path):
    deep = tmp_path / ("x" * 80) / ("y" * 80)
    s = servers.Server(flavour, deep)
    assert len(str(s.socket)) < 100
    s.close()


def test_flavour_files(tmp_path):
    assert "mariadb-10.11" in servers.list_flavours()
    with pytest.raises(ValueError, match="unknown server flavour 'mysql-3.23'"):
        servers.load_flavour("mysql-3.23")
    (tmp_path / "bad.toml").write_text('name = "bad"\nfamily = "mariadb"\ncolour = "red"\n')
    with pytest.raises(ValueError, match="unknown keys \\['colour'\\]"):
        servers.load_flavour("bad", tmp_path)
    (tmp_path / "x.toml").write_text('name = "x"\nfamily = "mariadb"\ndescription = ""\n'
                                     'source = "system"\nserver = "/nope/mariadbd"\n'
                                     'install_db = ["/nope/install"]\napt = ["mariadb-server"]\n')
    with pytest.raises(servers.ServerError, match="/nope/mariadbd is missing; install mariadb-server"):
        servers.load_flavour("x", tmp_path).check_installed()


def test_ports_3306_and_busy_ports_are_refused(flavour, tmp_path):
    with pytest.raises(servers.PortInUse, match="3306"):
        make_server(flavour, tmp_path, port=3306)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(servers.PortInUse, match=f"port {port} on 127.0.0.1 is in use"):
            make_server(flavour, tmp_path, port=port)


def test_parse_cpus():
    assert servers.parse_cpus("0-2,5") == [0, 1, 2, 5]
    for bad in ("", "a", "3-1", "1-"):
        with pytest.raises(ValueError):
            servers.parse_cpus(bad)


class FakeTarget:
    flavour = servers.load_flavour("mariadb-10.11")
    socket = Path("/tmp/dbs-x/server.sock")
    sysbench_connection = servers.Server.sysbench_connection  # the real server's options


def test_sysbench_run_argv():
    sb = sysbench.Sysbench(FakeTarget(), tables=4, table_size=1000, cpus="1")
    argv = sb.argv("run", threads=64, duration=30, seed=7)
    assert argv[:4] == ["taskset", "-c", "1", "sysbench"]
    assert argv[4] == str(sysbench.WRAPPER) and Path(argv[4]).exists()
    for opt in ("--db-driver=mysql", "--mysql-socket=/tmp/dbs-x/server.sock", "--mysql-user=root",
                "--mysql-db=sbtest", "--tables=4", "--table-size=1000", "--threads=64",
                "--time=30", "--events=0", "--report-interval=1", "--histogram=on",
                "--percentile=99", "--rand-seed=7"):
        assert opt in argv
    assert argv[-1] == "run"
    prep = sysbench.Sysbench(FakeTarget()).argv("prepare", threads=1)
    assert prep[0] == "sysbench" and prep[-1] == "prepare" and not any("--time" in a for a in prep)
    # our TPC-C takes its own scale, not the OLTP tables' (sysbench refuses unknown options)
    tpcc = sysbench.Sysbench(FakeTarget(), tables=4, warehouses=3).argv("run", workload="tpcc", duration=5)
    assert "--warehouses=3" in tpcc and not any(a.startswith(("--tables", "--table-size")) for a in tpcc)


def test_sysbench_env_names_the_workload_and_table_options():
    sb = sysbench.Sysbench(FakeTarget(), table_options="ROW_FORMAT=COMPRESSED")
    assert sb.env("oltp_read_write") == {"DBSTUDIES_WORKLOAD": "oltp_read_write",
                                         "DBSTUDIES_LUA_DIR": str(workloads.LUA_DIR),
                                         "DBSTUDIES_TABLE_OPTIONS": "ROW_FORMAT=COMPRESSED"}
    assert (workloads.LUA_DIR / "tpcc.lua").exists() and sb.env("tpcc")["DBSTUDIES_WORKLOAD"] == "tpcc"
    with pytest.raises(ValueError, match="unknown sysbench workload 'tpcx'"):
        sb.env("tpcx")


def test_children_get_the_hard_open_files_limit():
    import resource

    from dbstudies.core import proc
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
    try:
        out = proc.run(["bash", "-c", "ulimit -Sn"]).stdout.strip()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert out == ("unlimited" if hard == resource.RLIM_INFINITY else str(hard))
