"""`dbstudies servers`: list the server flavours, provision a rootfs flavour's tree, make a
flavour of a server directory."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..core import paths
from .kit import Command, arg, say


def servers(args: argparse.Namespace) -> int:
    from ..core.errors import ConfigError, ParamError
    action, name = args.action, args.name
    if action == "add":
        if not (name and args.path):
            raise ConfigError("servers add: name the flavour and its directory (NAME PATH)")
        return add(name, args)
    if args.path or args.runtime:
        raise ParamError([f"servers {action}: PATH and --runtime go with `servers add`"])
    if action == "provision":
        if not name:
            raise ParamError(["servers provision: name a flavour"])
        return provision(name)
    return listing()


def add(name: str, args: argparse.Namespace) -> int:
    from .. import servers as flavours
    # a problem is one line (a ConfigError), before anything is written
    out, flavour = flavours.add_dir(name, args.path, args.runtime, servers_dir=args.servers_dir, say=say)
    print(f"{flavour.name}: {flavour.family} {flavour.dialect.release} ({flavour.layout}"
          f"{', runtime ' + flavour.runtime if flavour.runtime else ''}; thread pool: "
          f"{'yes' if flavour.thread_pool else 'no'})\n  --version: {flavour.version_text}\n"
          f"  written: {out}")
    return 0


def provision(name: str) -> int:
    from .. import servers as flavours
    from ..core.errors import ConfigError, ParamError
    try:
        flavour = flavours.load_flavour(name)
    except ConfigError as e:
        raise ParamError([str(e)]) from None
    flavours.check_installed(flavour)
    flavour.provision(say=say)
    return 0


def listing() -> int:
    from .. import servers as flavours
    from ..core.errors import ConfigError
    print(f"{'flavour':<15} {'source':<34} {'version':<28} {'disk':>9}")
    for name in flavours.list_flavours():
        try:
            f = flavours.load_flavour(name)
        except ConfigError as e:  # a directory flavour whose directory changed: say so, go on
            print(f"{name:<15} {'?':<34} {str(e)[:60]}")
            continue
        source = {"system": "host", "rootfs": f"Debian {f.suite} rootfs", "remote": f"remote {f.host}"}.get(
            f.source, f"{f.layout}" + (f" in {f.runtime}" if f.runtime else ""))
        size = flavours.disk_use(f)
        version = f"{f.family} {f.dialect.release}" if f.source == "dir" else flavours.package_version(f)
        print(f"{name:<15} {source:<34} {version or 'not provisioned':<28} "
              f"{(f'{size / 2**20:.0f}Mi' if size else '—'):>9}" + (f"  {f.path}" if f.source == "dir" else ""))
    return 0


COMMANDS = [
    Command("servers", "list server flavours (version, source, provisioned, disk use); `servers provision NAME` "
                       "builds a rootfs flavour's tree; `servers add NAME PATH` makes a flavour of a server "
                       "directory", [
        arg("action", nargs="?", choices=("list", "provision", "add"), default="list"),
        arg("name", nargs="?", help="the flavour to provision or add"),
        arg("path", nargs="?", type=Path, help="add: an unpacked release tarball, an install prefix or a build tree"),
        arg("--runtime", default="", help="add: a rootfs flavour whose tree supplies the libraries the "
                                          "binary needs (e.g. mysql-9.7)"),
        arg("--servers-dir", type=Path, default=paths.SERVERS_DIR,
            help="add: where NAME.toml is written (default: env/servers)")], servers),
]
