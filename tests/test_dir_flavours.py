"""Servers from a directory, for real: the host's own MariaDB packages laid out as a release
tarball, an install prefix and a build tree; MySQL 9.7's files run in the mysql-9.7 rootfs
(`--runtime`). Family, version and thread pool are detected from the binary; every bad
directory is one line and exit 2 before anything is written or started; the same bits
reached two ways are compared pair by pair and named apart."""
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import trees
from conftest import REPO
from processes import processes_mentioning

from dbstudies import servers, stats
from dbstudies.core import paths
from dbstudies.kit.study import load
from dbstudies.measure import checks
from dbstudies.servers import dialect
from dbstudies.store import results
from dbstudies.store.results import Run

pytestmark = pytest.mark.server
CLI = [sys.executable, "-m", "dbstudies"]


def host_release() -> tuple[int, ...]:
    out = subprocess.run(["/usr/sbin/mariadbd", "--version"], capture_output=True, text=True).stdout
    return dialect.parse_version(out).version


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    return trees.mariadb_prefix(tmp_path_factory.mktemp("prefix"))


@pytest.fixture(scope="module")
def tarball(prefix, tmp_path_factory):
    return trees.mariadb_tarball(prefix, tmp_path_factory.mktemp("tarball"))


@pytest.mark.parametrize("layout", ["release tarball", "install prefix", "build tree"])
def test_each_layout_is_detected_from_its_binary(layout, prefix, tmp_path):
    tree = {"release tarball": lambda: trees.mariadb_tarball(prefix, tmp_path / "t"),
            "install prefix": lambda: prefix,
            "build tree": lambda: trees.mariadb_build_tree(prefix, tmp_path / "b")}[layout]()
    out, flavour = servers.add_dir("mine", tree, servers_dir=tmp_path / "servers")
    assert (flavour.layout, flavour.family, flavour.dialect.version) == (layout, "mariadb", host_release())
    assert flavour.thread_pool and flavour.compression_providers
    written = tomllib.loads(out.read_text())  # where, not what: that is detected at every use
    assert set(written) == {"name", "source", "path", "description", "cnf"} and written["source"] == "dir"
    given = dict(flavour.paths)
    assert set(given) == {"basedir", "lc_messages_dir", "character_sets_dir"} | ({"plugin_dir"} if layout != "build tree" else set())
    assert all(Path(v).is_relative_to(tree.resolve()) for v in given.values()), given
    assert (Path(given["lc_messages_dir"]) / "english" / "errmsg.sys").is_file()
    assert servers.load_flavour(str(out)) == flavour  # the file says enough to detect it again


def test_a_tarball_starts_from_our_own_bootstrap_and_reads_nothing_of_the_hosts(tarball, tmp_path):
    _, flavour = servers.add_dir("tb", tarball, servers_dir=tmp_path / "servers")
    with servers.Server(flavour, tmp_path / "srv", intent=servers.base_intent()) as s:
        s.start()
        where = s.query("SELECT @@basedir, @@lc_messages_dir, @@plugin_dir, @@character_sets_dir")[0]
        assert all(str(w).startswith(str(tarball.resolve())) for w in where), where
        assert s.query("SELECT user FROM mysql.user WHERE user = 'root' AND host = 'localhost'") == [("root",)]
        record = s.describe()
        assert record["binary_sha256"] == paths.sha256(Path("/usr/sbin/mariadbd"))  # the same bits
        assert (record["source"], record["layout"], record["directory"]) == ("dir", "release tarball", str(tarball.resolve()))
        assert "Ver 10.11" in record["version_text"]
        s.restart(intent=servers.Intent(thread_pool=True, thread_pool_size=2))
        assert s.query("SELECT @@thread_handling") == [("pool-of-threads",)]
    assert processes_mentioning(str(tmp_path / "srv")) == []


def test_a_mysql_tree_needs_a_runtime_and_runs_in_it(tmp_path):
    tree = trees.rootfs_prefix("mysql-9.7", tmp_path / "mysql")
    where = tmp_path / "servers"
    bare = subprocess.run([*CLI, "servers", "add", "my", str(tree), "--servers-dir", str(where)],
                          capture_output=True, text=True, timeout=120)
    assert bare.returncode == 2 and len(bare.stderr.strip().splitlines()) == 1, bare.stderr
    assert "libraries not found: libicuuc" in bare.stderr and "GLIBC_" in bare.stderr
    assert "--runtime FLAVOUR" in bare.stderr and not where.exists()
    added = subprocess.run([*CLI, "servers", "add", "my", str(tree), "--runtime", "mysql-9.7",
                            "--servers-dir", str(where)], capture_output=True, text=True, timeout=300)
    assert added.returncode == 0, added.stderr
    assert re.search(r"my: mysql 9\.7\.\d+ \(install prefix, runtime mysql-9\.7; thread pool: no\)", added.stdout)
    flavour = servers.load_flavour(str(where / "my.toml"))
    with servers.Server(flavour, tmp_path / "srv", intent=servers.base_intent()) as s:
        s.start()
        assert s.version.startswith("9.7.")
        assert Path(f"/proc/{s.pid}/comm").read_text().strip() == "mysqld"  # not bwrap
        assert s.query("SELECT @@lc_messages_dir")[0][0].startswith(str(tree.resolve()))
        assert s.query("SELECT @@log_bin, @@innodb_io_capacity, @@character_set_server") == [(0, 200, "utf8mb4")]


def test_a_newer_distributions_mariadb_finds_its_renamed_system_tables(tmp_path):
    """MariaDB 11.8 from Debian trixie as a directory: its bootstrap SQL is mariadb_*.sql."""
    tree = trees.rootfs_prefix("mariadb-11.8", tmp_path / "m118")
    _, flavour = servers.add_dir("m118", tree, "mariadb-11.8", servers_dir=tmp_path / "servers")
    assert (flavour.family, flavour.dialect.version[:2], flavour.runtime) == ("mariadb", (11, 8), "mariadb-11.8")
    assert [Path(p).name for p in flavour.bootstrap_sql][:3] == [
        "mariadb_system_tables.sql", "mariadb_performance_tables.sql", "mariadb_system_tables_data.sql"]
    assert flavour.cnf == ("base.cnf", "mariadb-11.cnf")  # skip_ssl: no certificates at every start
    assert "innodb_change_buffering" not in flavour.settings_for(servers.ALIGNED)  # 11.x has none


def _fake_arch(tree: Path) -> Path:
    """A tree whose server is an ELF header for aarch64."""
    head = bytearray(Path("/usr/sbin/mariadbd").read_bytes()[:64])
    head[18:20] = (183).to_bytes(2, "little")
    (tree / "bin").mkdir(parents=True)
    (tree / "bin/mariadbd").write_bytes(bytes(head))
    (tree / "bin/mariadbd").chmod(0o755)
    return tree


def _lone_binary(tree: Path) -> Path:
    (tree / "bin").mkdir(parents=True)
    (tree / "bin/mariadbd").symlink_to("/usr/sbin/mariadbd")
    return tree


def _datadir(tree: Path) -> Path:
    (tree / "mysql").mkdir(parents=True)
    (tree / "ibdata1").write_bytes(b"\0" * 16)
    return tree


def _not_a_server(tree: Path) -> Path:
    """A runnable binary that is no MySQL-family server: `--version` says something else."""
    (tree / "bin").mkdir(parents=True)
    (tree / "bin/mariadbd").symlink_to("/usr/bin/ls")
    (tree / "share/english").mkdir(parents=True)
    (tree / "share/english/errmsg.sys").write_bytes(b"")
    return tree


BAD_TREES = {
    "no server binary": (lambda t: t.mkdir() or t, "has no server binary (looked for bin/mariadbd"),
    "another architecture": (_fake_arch, "is a binary for aarch64; this host is x86_64"),
    "share files missing": (_lone_binary, "no english/errmsg.sys: the share files are missing"),
    "a data directory": (_datadir, "looks like a data directory (it has ibdata1)"),
    "an unparseable version": (_not_a_server, "cannot tell which server"),
    "not a directory": (lambda t: t.write_text("x") or t, "is not a directory"),
}


@pytest.mark.parametrize("make, message", BAD_TREES.values(), ids=BAD_TREES.keys())
def test_a_bad_directory_is_one_line_and_nothing_is_written(make, message, tmp_path):
    tree = make(tmp_path / "tree")
    where = tmp_path / "servers"
    p = subprocess.run([*CLI, "servers", "add", "mine", str(tree), "--servers-dir", str(where)],
                       capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (2, ""), p.stderr
    assert message in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not where.exists()


@pytest.mark.parametrize("args, message", [
    (["mariadb-10.11"], "flavour 'mariadb-10.11' exists already"),
    (["mine", "--runtime", "mariadb-10.11"], "runtime 'mariadb-10.11' is a system flavour"),
    (["mine", "--runtime", "nope"], "unknown server flavour 'nope'")])
def test_a_taken_name_or_a_runtime_that_is_none_is_one_line(args, message, tarball, tmp_path):
    name, *rest = args
    p = subprocess.run([*CLI, "servers", "add", name, str(tarball), *rest, "--servers-dir",
                        str(tmp_path / "servers")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and message in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "servers").exists()


@pytest.mark.notebook
def test_the_same_bits_two_ways_are_paired_and_the_report_names_them(tarball, tmp_path):
    """A versions smoke run of the host's MariaDB against the same binary as a tarball: an
    A/A across sources, compared pair by pair; the report's header gives each one's version and
    SHA-256. The verdict itself is not asserted: two 1-second rounds of live noise decide it by
    chance (issue 44) — the A/A rule's false-positive rate is tested on recorded and simulated
    data (test_paired_stats, test_analysis)."""
    out, _ = servers.add_dir("tarball", tarball, servers_dir=tmp_path / "servers")
    flavours = ["mariadb-10.11", str(out)]
    p = subprocess.run([*CLI, "run", "versions", "--profile", "smoke", "-p", "flavours", json.dumps(flavours),
                        "-p", "duration", "1", "-p", "warmup", "0", "--runs-dir", str(tmp_path / "runs")],
                       capture_output=True, text=True, timeout=600,
                       cwd=REPO)
    assert p.returncode == 0, p.stderr[-3000:]
    run = Run.open(next((tmp_path / "runs").glob("versions/*")))
    shas = {s["flavour"]: s["binary_sha256"] for s in run.metadata["servers"]}
    assert len(set(shas.values())) == 1 and set(shas) == {"mariadb-10.11", "tarball"}
    study = load("versions")
    params = checks.resolve(study, "smoke", flavours=flavours, duration=1, warmup=0)
    rel = study.relative(results.measured(run), params)
    assert stats.is_paired_table(rel) and len(rel) == 2, rel
    assert set(rel["candidate"]) == {"tarball"} and set(rel["baseline"]) == {"mariadb-10.11"}
    assert rel["verdict"].isin(["better", "worse", "draw"]).all(), rel
    html = (run.path / "report.html").read_text()
    sha = shas["mariadb-10.11"][:12]
    assert re.search(rf"tarball \(10\.11\.\d+-MariaDB[^,]*, release tarball {tarball.name}, sha256 {sha}\)", html)
    assert "mariadb-10.11 (10.11" in html and html.count(f"sha256 {sha}") == 3
    assert f"(mariadb-10.11 and tarball: the same binary, sha256 {sha})" in html  # named in the set-up line


@pytest.mark.parametrize("study, extra", [
    ("versions", lambda f: {"flavour": f, "flavours": [f, "mariadb-10.11"]}),
    ("thread_pool", lambda f: {"flavour": f, "flavours": [f]}),
    ("latency", lambda f: {"flavour": f, "flavours": [f]}),
    ("checkpoint_stalls", lambda f: {"configs": {"mine": {"flavour": f}, "host": {"flavour": "mariadb-10.11"}}}),
    ("dbt3_plans", lambda f: {"flavour": f}),
    ("compression", lambda f: {"flavour": f}),
])
def test_every_study_takes_a_directory_flavour_where_it_takes_a_flavour(study, extra, tarball, tmp_path):
    out, _ = servers.add_dir("mine", tarball, servers_dir=tmp_path / "servers")
    params = checks.resolve(load(study), "smoke", **extra(str(out)))
    assert str(out) in params.servers()
