"""A server from a directory: an unpacked release tarball, an install prefix, or a build tree.

`locate` finds what a server needs in the directory — its binary, its error messages
(`english/errmsg.sys`), character sets, plugins and (MariaDB) the SQL that creates the system
tables — wherever the layout keeps them; `check_binary` says in words why the binary cannot
run here (another architecture; libraries this host lacks, named); `detect` runs it
(`--version`, `--verbose --help`) for its family, version and thread pool. Nothing is
guessed from the folder's name.

Layouts tried (the first that has a server binary wins; each a path relative to the tree):

    release tarball   bin/mariadbd, bin/mysqld (share/, lib/plugin/)
    install prefix    usr/sbin/…, sbin/…, usr/local/mysql/bin/… (`make install`, `dpkg-deb -x`)
    build tree        sql/mariadbd (MariaDB), runtime_output_directory/mysqld (MySQL)
"""
from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from ..core import proc
from ..core.errors import ConfigError
from .dialect import Detected, parse_version

# where each layout keeps the server binary, in the order tried
BINARIES = (("release tarball", "bin/mariadbd"), ("release tarball", "bin/mysqld"),
            ("release tarball", "libexec/mariadbd"),
            ("install prefix", "usr/sbin/mariadbd"), ("install prefix", "usr/sbin/mysqld"),
            ("install prefix", "sbin/mariadbd"), ("install prefix", "sbin/mysqld"),
            ("install prefix", "usr/local/mysql/bin/mysqld"),
            ("build tree", "sql/mariadbd"), ("build tree", "sql/mysqld"),
            ("build tree", "runtime_output_directory/mysqld"))
# what a data directory has and a server directory has not
DATADIR_MARKS = ("ibdata1", "aria_log_control", "mysql.ibd", "mysql/user.frm", "mysql/global_priv.frm",
                 "undo_001", "ib_logfile0")
# MariaDB's system tables, in the order its bootstrap reads them (the first three needed),
# each by its names: MariaDB 11 renamed mysql_*.sql to mariadb_*.sql
BOOTSTRAP_SQL = (("mysql_system_tables.sql", "mariadb_system_tables.sql"),
                 ("mysql_performance_tables.sql", "mariadb_performance_tables.sql"),
                 ("mysql_system_tables_data.sql", "mariadb_system_tables_data.sql"),
                 ("fill_help_tables.sql",), ("maria_add_gis_sp_bootstrap.sql",),
                 ("mysql_sys_schema.sql", "mariadb_sys_schema.sql"))
NEEDED_SQL = 3
SEARCH_DEPTH = 5  # folders below the tree searched for share files
# ELF e_machine of the architectures `uname -m` names
MACHINES = {62: "x86_64", 183: "aarch64", 3: "i386", 21: "ppc64le", 22: "s390x", 243: "riscv64",
            40: "arm"}


@dataclass(frozen=True)
class Tree:
    """What `locate` found in a server directory (absolute paths)."""
    path: Path
    layout: str                   # release tarball | install prefix | build tree
    server: Path
    messages: Path                # lc_messages_dir: the folder holding english/errmsg.sys
    charsets: Path | None         # character_sets_dir (charsets/Index.xml)
    plugins: Path | None          # plugin_dir
    sql: tuple[Path, ...]         # MariaDB's bootstrap SQL files, in order (empty for MySQL)

    def missing_sql(self) -> list[str]:
        """The bootstrap SQL files MariaDB needs that the tree lacks (by their old names)."""
        have = {p.name for p in self.sql}
        return [names[0] for names in BOOTSTRAP_SQL[:NEEDED_SQL] if not have & set(names)]

    @property
    def basedir(self) -> Path:
        """The installation's base: the folder above the binary's (bin/, sbin/, sql/ …)."""
        return self.server.parent.parent

    def settings(self) -> dict[str, str]:
        """The paths every start of this server is given, so that it looks up nothing in
        the host's /usr (basedir, lc_messages_dir, character_sets_dir, plugin_dir)."""
        out = {"basedir": str(self.basedir), "lc_messages_dir": str(self.messages)}
        if self.charsets:
            out["character_sets_dir"] = str(self.charsets)
        if self.plugins:
            out["plugin_dir"] = str(self.plugins)
        return out


def locate(path: Path) -> Tree:
    """The server in directory `path`, or a ConfigError saying in one line what is wrong."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise ConfigError(f"{path} is not a directory")
    path = path.resolve()
    marks = [m for m in DATADIR_MARKS if (path / m).exists()]
    if marks:
        raise ConfigError(f"{path} looks like a data directory (it has {', '.join(marks)}), not a "
                          "server directory: give the unpacked tarball, install prefix or build tree")
    found = next(((layout, path / rel) for layout, rel in BINARIES
                  if (path / rel).is_file() and os.access(path / rel, os.X_OK)), None)
    if found is None:
        raise ConfigError(f"{path} has no server binary (looked for "
                          f"{', '.join(rel for _, rel in BINARIES)})")
    layout, server = found
    check_architecture(server)
    errmsg = _find(path, "english/errmsg.sys")
    if errmsg is None:
        raise ConfigError(f"{path} has a server binary ({server.relative_to(path)}) but no "
                          "english/errmsg.sys: the share files are missing (a build writes them "
                          "under sql/share or share/, an install under share/)")
    found_sql = (next((p for n in names if (p := _find(path, n))), None) for names in BOOTSTRAP_SQL)
    sql = tuple(p for p in found_sql if p)
    return Tree(path, layout, server, errmsg.parent.parent, _parent(_find(path, "charsets/Index.xml")),
                _plugins(path), sql)


def _find(top: Path, rel: str) -> Path | None:
    """The shallowest file `rel` below `top` (breadth first, at most SEARCH_DEPTH deep)."""
    level = [top]
    for _ in range(SEARCH_DEPTH + 1):
        for folder in sorted(level):
            if (folder / rel).is_file():
                return folder / rel
        level = [d for f in level for d in _subdirs(f)]
    return None


def _subdirs(folder: Path) -> list[Path]:
    try:
        return [d for d in folder.iterdir() if d.is_dir() and not d.is_symlink()]
    except OSError:
        return []


def _parent(p: Path | None) -> Path | None:
    return p.parent if p else None


def _plugins(top: Path) -> Path | None:
    """The folder of server plugins: lib/plugin, lib/mysql/plugin, plugin_output_directory …"""
    for rel in ("lib/plugin", "lib/mysql/plugin", "usr/lib/mysql/plugin", "lib64/mysql/plugin",
                "usr/lib/mariadb/plugin", "plugin_output_directory"):
        if (top / rel).is_dir():
            return top / rel
    return None


# ---------------------------------------------------------------- can it run here?

def _elf(binary: Path) -> tuple[bytes, str]:
    """The first 64 bytes of an ELF executable and its struct byte order; a ConfigError when
    it is not one."""
    try:
        with open(binary, "rb") as f:
            head = f.read(64)
    except OSError as e:
        raise ConfigError(f"cannot read {binary}: {e.strerror}") from None
    if head[:4] != b"\x7fELF" or len(head) < 64:
        raise ConfigError(f"{binary} is not an ELF executable (a script or a wrapper?): "
                          "point at the directory of the real server binary")
    return head, "<" if head[5] == 1 else ">"


def elf_interpreter(binary: Path) -> str | None:
    """The program interpreter (dynamic loader) an ELF executable names; None: static."""
    head, end = _elf(binary)
    wide = head[4] == 2
    phoff, phentsize, phnum = ((struct.unpack(end + "Q", head[32:40])[0], *struct.unpack(end + "HH", head[54:58]))
                               if wide else (struct.unpack(end + "I", head[28:32])[0], *struct.unpack(end + "HH", head[42:46])))
    try:
        with open(binary, "rb") as f:
            for i in range(phnum):
                f.seek(phoff + i * phentsize)
                ph = f.read(phentsize)
                if struct.unpack(end + "I", ph[:4])[0] == 3:  # PT_INTERP
                    off, size = (struct.unpack(end + "QQ", ph[8:16] + ph[32:40]) if wide
                                 else struct.unpack(end + "II", ph[4:8] + ph[16:20]))
                    f.seek(off)
                    return f.read(size).rstrip(b"\0").decode()
    except (struct.error, UnicodeDecodeError):
        raise ConfigError(f"{binary} is not a complete ELF executable (truncated?)") from None
    return None


def check_architecture(binary: Path) -> str | None:
    """ConfigError unless `binary` is an ELF executable for this host's architecture; its
    program interpreter (None: static)."""
    head, end = _elf(binary)
    machine = struct.unpack(end + "H", head[18:20])[0]
    arch, host = MACHINES.get(machine, f"machine {machine}"), os.uname().machine
    if arch != host:
        raise ConfigError(f"{binary} is a binary for {arch}; this host is {host}")
    return elf_interpreter(binary)


def check_binary(binary: Path, run: list[str], *, inside: str = "") -> None:
    """ConfigError unless `binary` can run here: built for this host's architecture, and every
    library it needs found by the dynamic loader (run through `run`, the argv prefix of the
    runtime it runs in; `inside` names that runtime in the message)."""
    interp = check_architecture(binary)
    if not interp:
        return  # static: nothing to load
    p = proc.run([*run, "env", "LD_TRACE_LOADED_OBJECTS=1", interp, str(binary)], timeout=60, check=False)
    missing = missing_libraries(p.stdout + p.stderr)
    if missing or p.returncode != 0:
        where = f"the {inside} runtime" if inside else "this host"
        said = "; ".join(missing) or proc.tail(p.stderr, 3)
        hint = ("" if inside else " — run it inside a rootfs flavour that has them: "
                "`dbstudies servers add NAME PATH --runtime FLAVOUR` (e.g. --runtime mysql-9.7)")
        raise ConfigError(f"{binary.name} cannot start on {where}: {said}{hint}")


def missing_libraries(loader_output: str) -> list[str]:
    """What the dynamic loader could not satisfy, in words: libraries not found, and symbol
    versions newer than the libraries here.

    >>> missing_libraries('\\tlibicuuc.so.78 => not found\\n'
    ...                   "x: /lib/libc.so.6: version `GLIBC_2.38' not found (required by x)\\n"
    ...                   "x: /lib/libm.so.6: version `GLIBC_2.38' not found (required by x)")
    ['libraries not found: libicuuc.so.78', 'versions newer than this one has: GLIBC_2.38 (libc.so.6, libm.so.6)']
    """
    libs = re.findall(r"^\s*(\S+) => not found", loader_output, re.M)
    versions: dict[str, list[str]] = {}
    for lib, version in re.findall(r"(\S+): version `([^']+)' not found", loader_output):
        versions.setdefault(version, []).append(Path(lib).name)
    out = [f"libraries not found: {', '.join(dict.fromkeys(libs))}"] if libs else []
    if versions:
        out.append("versions newer than this one has: " + ", ".join(
            f"{v} ({', '.join(dict.fromkeys(names))})" for v, names in sorted(versions.items())))
    return out


def detect(tree: Tree, run: list[str]) -> tuple[Detected, str]:
    """(what `--version` says the server is, its `--verbose --help` text), run through `run`."""
    p = proc.run([*run, str(tree.server), "--version"], timeout=60, check=False)
    detected = parse_version(p.stdout + "\n" + p.stderr)
    if detected is None:
        said = proc.tail(p.stdout + p.stderr, 2) or "nothing"
        raise ConfigError(f"cannot tell which server {tree.server} is: `--version` printed "
                          f"{said!r} (expected a line with 'Ver X.Y.Z')")
    paths = [f"--{k}={v}" for k, v in tree.settings().items()]
    helped = proc.run([*run, str(tree.server), "--no-defaults", "--user=root", *paths, "--verbose",
                       "--help"], timeout=60, check=False)
    return detected, helped.stdout
