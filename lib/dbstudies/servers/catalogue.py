"""The flavours there are: env/servers/<name>.toml files (or a flavour file given by its path)
read and checked — unknown or missing keys, wrong types, a name that is not the file's —
and a directory of the user's made a flavour, its family, version, thread pool and paths
detected from the binary there (`tree`), its cnf fragments chosen by family and version.
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from ..core import paths
from ..core.errors import ConfigError, did_you_mean
from . import launch, tree
from .dialect import Dialect
from .flavour import Flavour, remember_help

_FLAVOUR_TYPES = {"name": str, "family": str, "description": str, "source": str, "apt": list,
                  "suite": str, "packages": list, "server": str, "install_db": list,
                  "client_user": str, "cnf": list, "thread_pool": bool,
                  "compression_providers": bool, "host": str, "port": int, "password_env": str,
                  "option_file": str, "path": str, "runtime": str}
_SOURCES = {"system", "rootfs", "dir", "remote"}
# a directory flavour's file says where and (optionally) in what; the rest is detected
_DIR_KEYS = {"name", "source", "path", "runtime", "description", "cnf", "client_user"}


def list_flavours(servers_dir: Path = paths.SERVERS_DIR) -> list[str]:
    return sorted(p.stem for p in Path(servers_dir).glob("*.toml"))


def load_flavour(name: str, servers_dir: Path = paths.SERVERS_DIR) -> Flavour:
    """Read and validate env/servers/<name>.toml, or the flavour file `name` when it is a
    path ending in .toml (a remote target kept outside the repository)."""
    path = Path(name) if str(name).endswith(".toml") else Path(servers_dir) / f"{name}.toml"
    if not path.exists():
        known = list_flavours(servers_dir)
        raise ConfigError(f"unknown server flavour {name!r}{did_you_mean(name, known)}; known: {', '.join(known)}")
    data = tomllib.loads(path.read_text())
    if data.get("source") == "dir":
        return _dir_flavour(path, data, servers_dir)
    unknown = set(data) - set(_FLAVOUR_TYPES)
    needed = {"host", "port"} if data.get("source") == "remote" else {"server", "install_db"}
    missing = {"name", "family", "description", "source", *needed} - set(data)
    if unknown or missing:
        raise ConfigError(f"{path}: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
    for key, value in data.items():
        if not isinstance(value, _FLAVOUR_TYPES[key]):
            raise ConfigError(f"{path}: {key} must be a {_FLAVOUR_TYPES[key].__name__}")
    if data["name"] != path.stem or data["source"] not in _SOURCES:
        raise ConfigError(f"{path}: name must be {path.stem!r} and source one of {sorted(_SOURCES)}")
    if data.get("password_env") and data.get("option_file"):
        raise ConfigError(f"{path}: a password comes from password_env or option_file, not both")
    if data["source"] == "rootfs" and not (data.get("suite") and data.get("packages")):
        raise ConfigError(f"{path}: a rootfs flavour needs a suite and its packages")
    for key in ("apt", "packages", "install_db", "cnf"):
        if key in data:
            data[key] = tuple(data[key])
    return Flavour(**data)


_DIRS: dict[tuple, Flavour] = {}


def _dir_flavour(path: Path, data: dict[str, Any], servers_dir: Path) -> Flavour:
    """A directory flavour: its file names the folder (and runtime); everything else is
    detected from the binary there (once per binary state and file text)."""
    unknown, missing = set(data) - _DIR_KEYS, {"name", "path"} - set(data)
    if unknown or missing:
        raise ConfigError(f"{path}: unknown keys {sorted(unknown)} (a directory flavour's family, "
                          f"version and programs are detected), missing keys {sorted(missing)}")
    if data["name"] != path.stem:
        raise ConfigError(f"{path}: name must be {path.stem!r}")
    return dir_flavour(data["name"], Path(data["path"]), data.get("runtime", ""),
                       description=data.get("description", ""), cnf=tuple(data.get("cnf") or ()),
                       client_user=data.get("client_user", "root"), servers_dir=servers_dir)


def dir_flavour(name: str, folder: Path, runtime: str = "", *, description: str = "",
                cnf: tuple[str, ...] = (), client_user: str = "root", say=None,
                servers_dir: Path = paths.SERVERS_DIR) -> Flavour:
    """The flavour of the server in `folder` (run in `runtime`'s rootfs when given): layout,
    family, version, thread pool and paths detected; cnf fragments by family and version
    unless given. A ConfigError says in one line why it cannot be one."""
    found = tree.locate(folder)
    run_in = _runtime(runtime, servers_dir) if runtime else None
    stat = found.server.stat()
    key = (name, str(found.server), stat.st_mtime_ns, stat.st_size, runtime, description, cnf, client_user)
    if key in _DIRS:
        return _DIRS[key]
    if run_in is not None:
        run_in.check_installed()
        run_in.provision(**({"say": say} if say else {}))
    shell = Flavour(name=name, family="mariadb", description="", source="dir", server=str(found.server),
                    path=str(found.path), runtime=runtime, runtime_flavour=run_in)
    argv = launch.prefix(shell, [])
    tree.check_binary(found.server, argv, inside=runtime)
    detected, help_text = tree.detect(found, argv)
    dialect = Dialect(detected.family, detected.version, detected.variant)
    lacking = found.missing_sql()
    if lacking and not dialect.initialize:
        raise ConfigError(f"{found.path} has no {', '.join(lacking)}: MariaDB's system tables "
                          "cannot be created (its share files are missing)")
    install = install_command(str(found.server), dialect)
    flavour = Flavour(
        name=name, family=detected.family, source="dir", server=str(found.server),
        description=description or f"{detected.text.split(' Ver ', 1)[-1]} ({found.layout} {found.path})",
        install_db=install, client_user=client_user, cnf=cnf or default_fragments(dialect),
        thread_pool="pool-of-threads" in help_text, compression_providers=dialect.provider_plugins,
        path=str(found.path), runtime=runtime, runtime_flavour=run_in, version_text=detected.text,
        layout=found.layout, paths=tuple(found.settings().items()),
        bootstrap_sql=tuple(str(p) for p in found.sql))
    _DIRS[key] = flavour
    remember_help(flavour, help_text)  # detection asked it with the same paths: not again
    return flavour


def _runtime(name: str, servers_dir: Path) -> Flavour:
    """The rootfs flavour a directory's server runs in (its tree supplies the libraries)."""
    run_in = load_flavour(name, servers_dir if name in list_flavours(servers_dir) else paths.SERVERS_DIR)
    if run_in.source != "rootfs":
        raise ConfigError(f"runtime {name!r} is a {run_in.source} flavour; a runtime is a "
                          "rootfs flavour whose tree supplies the libraries (e.g. mysql-9.7)")
    return run_in


def install_command(server: str, dialect: Dialect) -> tuple[str, ...]:
    """How a directory's server creates its system tables: MySQL's `--initialize-insecure`,
    MariaDB's `--bootstrap` reading the share files' SQL.

    >>> install_command("mysqld", Dialect("mysql", (9, 7, 0)))
    ('mysqld', '--initialize-insecure')
    """
    return ((server, "--initialize-insecure") if dialect.initialize else
            (server, "--bootstrap", "--log-warnings=0", "--enforce-storage-engine=",
             "--max-allowed-packet=8M", "--net-buffer-length=16K"))


def default_fragments(dialect: Dialect) -> tuple[str, ...]:
    """The env/cnf fragments a server of this family and version gets.

    >>> default_fragments(Dialect("mariadb", (11, 8, 6))), default_fragments(Dialect("mysql", (8, 0, 36)))
    (('base.cnf', 'mariadb-11.cnf'), ('base.cnf', 'mysql-9.cnf'))
    >>> default_fragments(Dialect("mariadb", (10, 11, 19)))
    ('base.cnf',)
    """
    if dialect.mysql:
        return ("base.cnf", "mysql-9.cnf") if dialect.at_least(8, 0) else ("base.cnf",)
    return ("base.cnf", "mariadb-11.cnf") if dialect.at_least(11, 0) else ("base.cnf",)


def dir_flavour_text(flavour: Flavour, by: str) -> str:
    """A directory flavour's file (written by `by`): where its server is, in what runtime,
    its description and cnf fragments; the rest is detected at every use."""
    lines = [f"# {flavour.description}", f"# Written by `{by}`; family, version, thread pool "
             "and paths are detected from the binary at every use.",
             f'name = "{flavour.name}"', 'source = "dir"', f"path = {_quote(flavour.path)}"]
    if flavour.runtime:
        lines.append(f'runtime = "{flavour.runtime}"')
    lines += [f"description = {_quote(flavour.description)}",
              "cnf = [" + ", ".join(f'"{c}"' for c in flavour.cnf) + "]"]
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    """A TOML basic string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
