"""Server directories for the tests, made from this host's own packages (no internet beyond
Debian's archive): MariaDB 10.11 as Debian ships it, laid out as a release tarball, an
install prefix and a build tree; MySQL 9.7's files copied out of the mysql-9.7 rootfs.

`apt-get download` fetches the installed versions of the packages once per machine into
data/debs/ (git-ignored); where the archive no longer has that version, the same files are
copied from the host's installation (`dpkg -L`), so the bits are the host's either way.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from conftest import REPO

from dbstudies import servers
from dbstudies.servers import rootfs

PACKAGES = ("mariadb-server-core", "mariadb-client-core", "mariadb-server")
DEBS = REPO / "data" / "debs"


def _installed_version(pkg: str) -> str:
    return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                          text=True, check=True).stdout.strip()


def mariadb_prefix(dest: Path) -> Path:
    """`dpkg-deb -x` of the host's MariaDB packages into `dest` (usr/sbin/mariadbd …)."""
    DEBS.mkdir(parents=True, exist_ok=True)
    wanted = [f"{p}={_installed_version(p)}" for p in PACKAGES]
    have = {d.name.split("_")[0] for d in DEBS.glob("*.deb")}
    if not set(PACKAGES) <= have:
        got = subprocess.run(["apt-get", "download", "-q", *wanted], cwd=DEBS, capture_output=True, text=True)
        if got.returncode != 0:  # the archive moved on: the installed files are the same bits
            return _from_installed(dest)
    for deb in sorted(DEBS.glob("*.deb")):
        if deb.name.split("_")[0] in PACKAGES:
            subprocess.run(["dpkg-deb", "-x", str(deb), str(dest)], check=True)
    return dest


def _from_installed(dest: Path) -> Path:
    for pkg in PACKAGES:
        files = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True, check=True).stdout
        for name in files.split():
            src = Path(name)
            if src.is_file() and not src.is_symlink():
                (dest / src.relative_to("/")).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / src.relative_to("/"))
    return dest


def _copy(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dest, dirs_exist_ok=True)
    else:
        shutil.copy2(src, dest)


def mariadb_tarball(prefix: Path, dest: Path) -> Path:
    """The prefix laid out as MariaDB's release tarballs are: bin/, scripts/, share/ (the
    language folders, charsets and the bootstrap SQL side by side), lib/plugin/."""
    _copy(prefix / "usr/sbin/mariadbd", dest / "bin/mariadbd")
    _copy(prefix / "usr/bin/my_print_defaults", dest / "bin/my_print_defaults")
    _copy(prefix / "usr/bin/mariadb-install-db", dest / "scripts/mariadb-install-db")
    _copy(prefix / "usr/share/mysql", dest / "share")
    _copy(prefix / "usr/lib/mysql/plugin", dest / "lib/plugin")
    return dest


def mariadb_build_tree(prefix: Path, dest: Path) -> Path:
    """The prefix laid out as a MariaDB build tree keeps it: sql/mariadbd, the compiled
    messages under sql/share/, the system tables' SQL under scripts/."""
    _copy(prefix / "usr/sbin/mariadbd", dest / "sql/mariadbd")
    share = prefix / "usr/share/mysql"
    for lang in (d for d in share.iterdir() if (d / "errmsg.sys").exists()):
        _copy(lang, dest / "sql/share" / lang.name)
    _copy(share / "charsets", dest / "sql/share/charsets")
    for sql in share.glob("*.sql"):
        _copy(sql, dest / "scripts" / sql.name)
    return dest


def rootfs_prefix(flavour: str, dest: Path) -> Path:
    """A rootfs flavour's server, messages, SQL and plugins copied out of its tree as an
    install prefix (usr/sbin/mysqld or mariadbd …): a newer distribution's binary, which
    needs that rootfs's libraries (`--runtime`)."""
    f = servers.load_flavour(flavour)
    f.provision(say=print)
    top = rootfs.tree(f)
    for rel in (f.server.lstrip("/"), "usr/share/mysql", "usr/share/mariadb", "usr/lib/mysql/plugin"):
        if (top / rel).exists():
            _copy(top / rel, dest / rel)
    return dest
