"""Every server flavour, for real: the host's MariaDB and the ones that run in a rootfs of
their own (other Debian suites, provisioned with mmdebstrap on first use, run through bwrap).
Each is initialised, started, restarted with a setting, cold-restarted and stopped, and
identified by @@version. Rootfs caches are built under data/rootfs once per machine."""
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from processes import processes_mentioning

from dbstudies import servers, tpch
from dbstudies.servers import rootfs
from dbstudies.workloads import sql

pytestmark = pytest.mark.server
CLI = [sys.executable, "-m", "dbstudies"]
# the flavours the repository defines (a directory flavour of a user's own is tested by
# tests/test_dir_flavours.py on trees it builds itself)
FLAVOURS = [n for n in servers.list_flavours() if servers.load_flavour(n).source in ("system", "rootfs")]
ROOTFS = [n for n in FLAVOURS if servers.load_flavour(n).source == "rootfs"]


def test_the_four_versions_are_defined():
    assert {"mariadb-10.5", "mariadb-10.11", "mariadb-11.8", "mysql-9.7"} <= set(FLAVOURS)
    assert servers.load_flavour("mysql-9.7").thread_pool is False


def host_state():
    """What a private server must never touch: the system service's files and port 3306."""
    etc = Path("/etc/mysql")
    stamps = sorted((str(p), p.stat().st_mtime_ns) for p in etc.rglob("*")) if etc.exists() else []
    listening = subprocess.run(["ss", "-Hltn", "sport = :3306"], capture_output=True, text=True).stdout
    return stamps, listening.strip()


@pytest.mark.parametrize("name", FLAVOURS)
def test_flavour_lifecycle_and_version(name, tmp_path):
    flavour = servers.load_flavour(name)
    before = host_state()
    t0 = time.monotonic()
    flavour.provision(say=lambda m: print(m))  # the first use on a machine builds the rootfs
    provision_s = time.monotonic() - t0
    with servers.Server(flavour, tmp_path / "srv", max_clients=300) as s:
        s.start()
        redo = "innodb_redo_log_capacity" if flavour.family == "mysql" else "innodb_log_file_size"
        assert s.query(f"SELECT @@{redo}") == [(512 * 2**20,)]  # the base intent, in its dialect
        family_version = name.split("-", 1)[1]
        assert s.version.startswith(family_version + "."), s.version
        assert Path(f"/proc/{s.pid}/comm").read_text().strip() == Path(flavour.server).name  # not bwrap
        v = s.variables()
        assert int(v["port"]) == s.port != 3306 and v["bind_address"] == "127.0.0.1"
        assert int(v["max_connections"]) == 300 + servers.CONNECTION_HEADROOM
        s.restart({"innodb_buffer_pool_size": "256M"})
        assert s.query("SELECT @@innodb_buffer_pool_size") == [(256 * 2**20,)]
        first = s.pid
        s.cold_restart()
        assert s.pid != first and s.query("SELECT @@innodb_buffer_pool_size") == [(2 * 2**30,)]
        pool = servers.Intent(thread_pool=True, thread_pool_size=3)
        if flavour.thread_pool:
            s.restart(intent=pool)
            assert s.query("SELECT @@thread_handling, @@thread_pool_size") == [("pool-of-threads", 3)]
        else:
            with pytest.raises(servers.Unavailable, match=f"not available on {name}"):
                s.restart(intent=pool)
            assert s.running  # refused before the stop
        s.restart(intent=servers.Intent(redo_log="64M", page_compression="zlib"))  # the pool is gone
        assert s.query(f"SELECT @@thread_handling, @@{redo}") == [("one-thread-per-connection", 64 * 2**20)]
        s.query("CREATE DATABASE dbs")
        for kind in servers.cnf.COMPRESSION:
            s.query(f"CREATE TABLE dbs.t_{kind} (a INT PRIMARY KEY, b TEXT) {flavour.table_options(kind)}")
            s.query(f"INSERT INTO dbs.t_{kind} VALUES (1, REPEAT('x', 5000))")
        created = {k: s.query(f"SHOW CREATE TABLE dbs.t_{k}")[0][1] for k in servers.cnf.COMPRESSION}
        assert "ROW_FORMAT=COMPRESSED" in created["row"] and "KEY_BLOCK_SIZE=8" in created["row"]
        if flavour.family == "mysql":  # the algorithm is the table's own
            assert "COMPRESSION='zlib'" in created["page"]
        else:  # the algorithm is the server's
            assert re.search(r"`PAGE_COMPRESSED`='?1", created["page"]), created["page"]
            assert s.query("SELECT @@innodb_compression_algorithm") == [("zlib",)]
        assert "COMPRESS" not in created["none"].upper()
        # TPC-H in this family's dialect: LOAD DATA LOCAL (MySQL: local_infile=ON in its
        # fragment), and all 22 answers right at SF 0.01
        loaded = tpch.load(s, tpch.generate(0.01, say=print), say=print)
        assert sum(t["rows"] for t in loaded) == 86_805
        reference = tpch.answers(0.01)
        with sql.Session(s, "tpch") as session:
            wrong = [p for n, q in tpch.queries().items()
                     for p in tpch.check(n, session.execute(q, 60, keep_result=True).result, reference[n])]
            three = sql.join_order(session.explain(tpch.queries()[3]))  # MySQL: its JSON version 1
            thirteen = sql.order_signature(sql.join_order(session.explain(tpch.queries()[13])))
        assert wrong == []
        assert sorted(t["table"] for t in three) == ["customer", "lineitem", "orders"]
        assert thirteen.startswith("<derived2> | 2: ")  # named alike in both families
        s.stop()
        assert not s.running
    assert processes_mentioning(str(tmp_path / "srv")) == []
    assert host_state() == before
    print(f"{name}: provision {provision_s:.1f} s, {servers.disk_use(flavour) / 2**20:.0f} MiB")


@pytest.mark.parametrize("name", ROOTFS)
def test_servers_lists_versions_and_disk_use(name):
    servers.load_flavour(name).provision()
    p = subprocess.run([*CLI, "servers"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith(name + " "))
    suite = servers.load_flavour(name).suite
    assert f"Debian {suite} rootfs" in line and line.rstrip().endswith("Mi")
    assert servers.package_version(servers.load_flavour(name)) in line


def fake_flavour(tmp_path, name="mariadb-11.8"):
    return servers.load_flavour(name), tmp_path / "rootfs"


def test_a_corrupt_cache_tarball_is_refused(tmp_path):
    flavour, root = fake_flavour(tmp_path)
    tar = rootfs.tarball(flavour, root)
    tar.parent.mkdir(parents=True)
    tar.write_bytes(b"not the tarball that was built")
    tar.with_name(tar.name + ".sha256").write_text("0" * 64 + f"  {tar.name}\n")
    with pytest.raises(servers.ServerError, match="is corrupt .* delete both files"):
        rootfs.provision(flavour, root)
    tar.with_name(tar.name + ".sha256").unlink()
    with pytest.raises(servers.ServerError, match="has no checksum"):
        rootfs.provision(flavour, root)
    assert not rootfs.tree(flavour, root).exists()


def test_a_damaged_tarball_with_its_checksum_leaves_no_tree(tmp_path):
    flavour, root = fake_flavour(tmp_path)
    tar = rootfs.tarball(flavour, root)
    tar.parent.mkdir(parents=True)
    tar.write_bytes(b"\x28\xb5\x2f\xfd garbage")  # a zstd magic, then nothing valid
    tar.with_name(tar.name + ".sha256").write_text(f"{rootfs.sha256(tar)}  {tar.name}\n")
    with pytest.raises(servers.ServerError, match="cannot extract"):
        rootfs.provision(flavour, root)
    assert not rootfs.is_provisioned(flavour, root)
    assert sorted(root.iterdir()) == sorted([tar, tar.with_name(tar.name + ".sha256")])


def test_the_cache_key_follows_the_definition():
    a = servers.load_flavour("mariadb-11.8")
    b = servers.Flavour(**{**a.__dict__, "packages": (*a.packages, "lz4")})
    assert rootfs.key(a) == rootfs.key(servers.load_flavour("mariadb-11.8")) != rootfs.key(b)


def test_mirror_comes_from_the_hosts_apt_sources(tmp_path):
    sources = tmp_path / "debian.sources"
    sources.write_text("Types: deb\nURIs: http://mirror.invalid/debian-security\nSuites: x\n\n"
                       "Types: deb\nURIs: http://mirror.invalid/debian/\nSuites: bookworm\n")
    assert rootfs.mirror([sources]) == "http://mirror.invalid/debian"
    with pytest.raises(servers.ServerError, match="cannot find the Debian archive"):
        rootfs.mirror([tmp_path / "missing"])


def test_a_setting_mysql_does_not_know_is_the_servers_clear_error(tmp_path):
    flavour = servers.load_flavour("mysql-9.7")
    with servers.Server(flavour, tmp_path / "srv") as s:
        s.start()
        s.stop()
        with pytest.raises(servers.ServerDied, match="(?s)during start-up.*unknown variable "
                                                     "'thread_pool_size=4'"):
            s.start({"thread_pool_size": 4})  # MariaDB's thread pool: not in MySQL community
        assert not s.running
    assert processes_mentioning(str(tmp_path)) == []


@pytest.mark.notebook
def test_settings_are_checked_against_each_flavours_own_options():
    """Asked of the server itself (--verbose --help), before any run starts."""
    mariadb, mysql = servers.load_flavour("mariadb-10.11"), servers.load_flavour("mysql-9.7")
    mysql.provision()
    common = ["innodb_buffer_pool_size", "skip_name_resolve", "max_connections", "loose_anything"]
    assert servers.unknown_settings(mariadb, [*common, "thread_pool_size", "plugin-load-add"]) == []
    assert servers.unknown_settings(mysql, [*common, "innodb_redo_log_capacity", "mysqlx"]) == []
    assert servers.unknown_settings(mariadb, ["innodb_redo_log_capacity"]) == ["innodb_redo_log_capacity"]
    assert servers.unknown_settings(mysql, ["thread_pool_size"]) == ["thread_pool_size"]
    p = subprocess.run([*CLI, "run", "versions", "--profile", "smoke", "-p", "settings",
                        '{"thread_pool_size": 4}'], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "settings: ['thread_pool_size'] are not options of mysql-9.7" in p.stderr


@pytest.mark.notebook
def test_values_a_server_would_adjust_or_refuse_are_errors_before_any_start(tmp_path):
    """Also asked of the server: MariaDB warns or errs, MySQL silently adjusts (compared)."""
    mariadb, mysql = servers.load_flavour("mariadb-10.11"), servers.load_flavour("mysql-9.7")
    mysql.provision()
    fine = {"innodb_flush_log_at_trx_commit": 0, "innodb_adaptive_flushing": "OFF",
            "innodb_io_capacity": 2000, "innodb_io_capacity_max": 4000, "skip_name_resolve": None,
            "innodb_max_dirty_pages_pct_lwm": 10, "innodb_buffer_pool_size": "1G"}
    assert servers.bad_values(mariadb, fine) == servers.bad_values(mysql, fine) == []
    bad = {"innodb_flush_log_at_trx_commit": 7, "innodb_max_dirty_pages_pct": 120,
           "innodb_adaptive_flushing": "maybe"}
    for flavour in (mariadb, mysql):
        said = "\n".join(servers.bad_values(flavour, bad))
        assert all(n.replace("_", "-") in said or n in said for n in bad), said
        assert "adjusted to 3" in said or "would use 2, not 7" in said
    p = subprocess.run([*CLI, "run", "versions", "--profile", "smoke", "--runs-dir", str(tmp_path),
                        "-p", "settings", '{"innodb_io_capacity": "lots"}'],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and not list(tmp_path.iterdir())  # refused before any run
    assert "settings: mariadb-10.11 refuses a value:" in p.stderr
    assert "settings: mysql-9.7 refuses a value:" in p.stderr and "'innodb-io-capacity'" in p.stderr
