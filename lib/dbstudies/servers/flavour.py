"""Server flavours: how to get and run one server version (env/servers/<name>.toml).

A flavour names its source — the host's binaries (`system`), a Debian suite's provisioned
into a rootfs of its own (`rootfs`), a directory of the user's (`dir`: a release tarball,
an install prefix or a build tree, optionally run inside a rootfs flavour's tree, its
`runtime`), or a server somewhere else (`remote`) —, its programs, and the cnf fragments
every start of it gets. Its dialect (`dialect.Dialect`) comes from the family and the
version its binary prints: a directory flavour's family, version, thread pool and paths are
all detected from the binary (`tree`), never declared.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..core import proc
from ..core.errors import ServerError
from . import launch, rootfs
from .cnf import Intent, norm_key
from .dialect import Detected, Dialect, Unavailable, parse_version


@dataclass(frozen=True)
class Flavour:
    """How to get and run one server version (one env/servers/*.toml file)."""
    name: str
    family: str                     # mariadb | mysql
    description: str
    source: str                     # system: the host's binaries; rootfs: a Debian suite's;
                                    # dir: a directory's; remote: a server somewhere else
    server: str = ""                # path of mariadbd / mysqld (inside the rootfs for rootfs)
    install_db: tuple[str, ...] = ()  # argv; --defaults-file is inserted after argv[0]
    apt: tuple[str, ...] = ()       # system: the host's apt packages (`make setup` installs)
    suite: str = ""                 # rootfs: the Debian suite …
    packages: tuple[str, ...] = ()  # … and the packages installed into the flavour's rootfs
    client_user: str = "root"
    cnf: tuple[str, ...] = ()       # fragments under env/cnf, in order
    thread_pool: bool = False       # has a community thread pool (thread_handling)
    compression_providers: bool = False  # compression algorithms but zlib are provider plugins
    host: str = ""                  # remote: where it listens …
    port: int = 0
    password_env: str = ""          # … and where its password comes from (`servers.remote`)
    option_file: str = ""
    path: str = ""                  # dir: the directory …
    runtime: str = ""               # … the rootfs flavour it runs in ("": the host) …
    runtime_flavour: "Flavour | None" = None
    version_text: str = ""          # … and what was detected from its binary
    layout: str = ""
    paths: tuple[tuple[str, str], ...] = ()   # basedir, lc_messages_dir … every start gets
    bootstrap_sql: tuple[str, ...] = ()       # MariaDB: the system tables' SQL (own bootstrap)

    @property
    def remote(self) -> bool:
        return self.source == "remote"

    @property
    def host_binary(self) -> Path:
        """The server binary as a path on this host (inside its tree for a rootfs flavour)."""
        if self.source == "rootfs":
            return rootfs.tree(self) / Path(self.server).relative_to("/")
        return Path(self.server)

    @property
    def detected(self) -> Detected | None:
        """What the binary's `--version` says (None until it can run: a rootfs not yet
        provisioned, a remote server)."""
        return parse_version(self.version_text) if self.version_text else _version_of(self)

    @property
    def dialect(self) -> Dialect:
        """How this server says an intent: its family's, at the version its binary prints."""
        d = self.detected
        return Dialect(self.family, d.version, d.variant) if d else Dialect(self.family)

    def check_installed(self) -> None:
        """The host's binaries are there (system), or the rootfs is provisioned or can be.
        A remote flavour is checked by asking it (`servers.check_installed`)."""
        if self.remote:
            raise ServerError(f"flavour {self.name} is remote: `servers.check_installed` asks it")
        runtime = launch.root_of(self)
        if runtime is not None:
            if not rootfs.is_provisioned(runtime) and rootfs.missing_tools():
                raise ServerError(f"flavour {self.name} runs in {runtime.name}'s rootfs and needs "
                                  f"{', '.join(rootfs.missing_tools())} (`make setup` installs them)")
            if self.source == "rootfs":
                return
        if self.source == "dir":
            if not Path(self.server).is_file():
                raise ServerError(f"flavour {self.name}: {self.server} is gone (its directory "
                                  f"{self.path} changed?); `dbstudies servers add` it again")
            return
        for binary in (self.server, self.install_db[0]):
            if not Path(binary).exists():
                raise ServerError(f"flavour {self.name}: {binary} is missing; install "
                                  f"{' '.join(self.apt)} (`make setup` does)")

    def settings_for(self, intent: Intent) -> dict[str, Any]:
        """`intent` in this flavour's dialect; `Unavailable` for a feature it lacks."""
        said = self.dialect.settings(intent, self.name, thread_pool=self.thread_pool,
                                     providers=self.compression_providers)
        plugin = said.get("plugin_load_add")
        if plugin:
            where = self.plugin_file(plugin)
            if where is not None and not where.exists():
                raise Unavailable(
                    f"page compression with {intent.page_compression} is not available on "
                    f"{self.name}: its server has no {plugin} plugin ({where.name} is not in "
                    f"its plugin_dir; Debian package mariadb-plugin-{plugin.replace('_', '-')})")
        return said

    def plugin_file(self, plugin: str) -> Path | None:
        """The file the server would load `plugin` from, as a path on this host (inside the
        rootfs for rootfs flavours); None when that cannot be known yet (the server is not
        installed or its rootfs not provisioned: its start will say)."""
        plugin_dir = server_defaults(self).get("plugin_dir")
        if not plugin_dir:
            return None
        where = Path(plugin_dir) / f"{plugin}.so"
        return rootfs.tree(self) / where.relative_to("/") if self.source == "rootfs" else where

    def unavailable(self, intent: Intent) -> str | None:
        """Why this flavour cannot do `intent` ("the thread pool is not available on …"),
        or None when it can."""
        try:
            self.settings_for(intent)
        except Unavailable as e:
            return str(e)
        return None

    def table_options(self, compression: str, algorithm: str = "zlib") -> str:
        """CREATE TABLE options for a compression kind (none | row | page) in this dialect."""
        return self.dialect.table_options(compression, algorithm)

    @property
    def provisioned(self) -> bool:
        """Runnable without building anything first (always, for the host's binaries)."""
        runtime = launch.root_of(self)
        return runtime is None or rootfs.is_provisioned(runtime)

    def provision(self, say=print) -> None:
        """Make the flavour runnable: build/extract its rootfs or its runtime's (a no-op
        for the host's binaries)."""
        runtime = launch.root_of(self)
        if runtime is not None:
            rootfs.provision(runtime, say=say)

    def start_settings(self) -> dict[str, str]:
        """What every start of this server is told before anything else: a directory
        flavour's own paths (nothing is looked up in the host's /usr)."""
        return dict(self.paths)


_VERSIONS: dict[Flavour, Detected | None] = {}


def _version_of(flavour: Flavour) -> Detected | None:
    """`--version` of a system or rootfs flavour's server, asked once; None while it cannot
    run (not installed or provisioned), or for a remote flavour."""
    if flavour.remote or not _runnable(flavour):
        return None
    if flavour not in _VERSIONS:
        p = proc.run([*launch.prefix(flavour, []), flavour.server, "--version"], timeout=60, check=False)
        _VERSIONS[flavour] = parse_version(p.stdout + p.stderr)
    return _VERSIONS[flavour]


def _runnable(flavour: Flavour) -> bool:
    runtime = launch.root_of(flavour)
    if runtime is not None and not rootfs.is_provisioned(runtime):
        return False
    return flavour.host_binary.exists()


def package_version(flavour: Flavour) -> str | None:
    """The Debian version of the flavour's first package: installed on the host (system) or
    in its provisioned rootfs; None when not installed or provisioned."""
    if flavour.source == "dir":
        return flavour.version_text
    pkg = (flavour.apt or flavour.packages or ("",))[0]
    if flavour.source == "rootfs":
        status = rootfs.tree(flavour) / "var/lib/dpkg/status"
        if not rootfs.is_provisioned(flavour) or not status.exists():
            return None
        for block in status.read_text(errors="replace").split("\n\n"):
            if re.search(rf"(?m)^Package: {re.escape(pkg)}$", block):
                m = re.search(r"(?m)^Version: (\S+)$", block)
                return m.group(1) if m else None
        return None
    p = proc.run(["dpkg-query", "-W", "-f=${Version}", pkg], timeout=60, check=False)
    return p.stdout.strip() or None if p.returncode == 0 else None


_PREFIXES = ("loose_", "skip_", "enable_", "disable_", "maximum_")


_PLAIN_HELP: dict[Flavour, str] = {}


def remember_help(flavour: Flavour, text: str) -> None:
    """`--verbose --help`'s text of a flavour, asked already (a directory's detection did)."""
    _PLAIN_HELP[flavour] = text


def _plain_help(flavour: Flavour) -> str | None:
    """`--verbose --help` without options, asked once per flavour; None when it cannot be
    asked yet (a rootfs flavour not provisioned)."""
    if flavour not in _PLAIN_HELP:
        p = _help(flavour)
        if p is None:
            return None
        _PLAIN_HELP[flavour] = p.stdout
    return _PLAIN_HELP[flavour]


def server_defaults(flavour: Flavour) -> dict[str, str]:
    """The variables the flavour's server has without any option (`--verbose --help`'s
    table: plugin_dir, innodb_page_size …); empty when it cannot be asked yet."""
    text = _plain_help(flavour)
    return _variables_table(text) if text else {}


def known_options(flavour: Flavour) -> frozenset[str] | None:
    """The option names the flavour's server accepts (`--verbose --help`, underscores), or
    None when that cannot be asked yet (a rootfs flavour not provisioned)."""
    text = _plain_help(flavour)
    if not text:
        return None
    names = {norm_key(o) for o in re.findall(r"(?m)^\s+(?:-\w, )?--([a-z0-9][a-z0-9_-]*)", text)}
    # the variables table also lists options the text does not
    return frozenset(names | set(_variables_table(text))) or None


def _help(flavour: Flavour, options: Iterable[str] = ()) -> proc.Result | None:
    """`<server> --no-defaults [options] --verbose --help` (no datadir, nothing started), or
    None when the flavour's server cannot be run yet (not installed or provisioned)."""
    if flavour.remote or not _runnable(flavour):
        return None
    return proc.run([*launch.prefix(flavour, []), flavour.server, "--no-defaults",
                     "--user=root", *_option_args(flavour.start_settings()), *options, "--verbose",
                     "--help"], timeout=60, check=False)


def unknown_settings(flavour: Flavour, names: Iterable[str]) -> list[str]:
    """The setting names the flavour's server does not know (`loose_…` never counts)."""
    known = known_options(flavour)
    if known is None:
        return []
    unknown = []
    for name in map(norm_key, names):
        bare = next((name[len(p):] for p in _PREFIXES if name.startswith(p)), name)
        if not name.startswith("loose_") and name not in known and bare not in known:
            unknown.append(name)
    return unknown


def _option_args(settings: Mapping[str, Any]) -> list[str]:
    """Settings as command-line options (None: bare; True/False: ON/OFF; list: repeated)."""
    args = []
    for key, value in settings.items():
        for v in value if isinstance(value, list) else [value]:
            v = {True: "ON", False: "OFF"}.get(v, v) if isinstance(v, bool) else v
            args.append(f"--{norm_key(key)}" if v is None else f"--{norm_key(key)}={v}")
    return args


def bad_values(flavour: Flavour, settings: Mapping[str, Any]) -> list[str]:
    """What the flavour's server says of these values, one line per complaint: errors, and
    values it would adjust ("unsigned value 7 adjusted to 3") or ignore. Asked of the server
    itself (`--verbose --help` with the settings as options: no datadir, nothing started),
    so no list of valid values is kept here. Empty when it cannot be asked yet (a rootfs
    flavour not provisioned: its first start will say)."""
    p = _help(flavour, _option_args(settings)) if settings else None
    if p is None:
        return []
    names = {norm_key(k) for k in settings}
    complaints = []
    for line in p.stderr.splitlines():
        text = re.sub(r"^.*?\[(?:ERROR|Warning)\]\s*(?:\[[^]]*\]\s*)*", "", line)
        mentioned = {n for n in names if n in norm_key(text)}
        if mentioned and re.search(r"ERROR|adjusted to|ignoring option|invalid|Unknown|"
                                   r"[Ii]ncorrect", line):
            complaints.append(text.strip())
            names -= mentioned
    # MySQL adjusts some values silently in this mode: compare what it would use
    used = _variables_table(p.stdout)
    for key, value in settings.items():
        name = norm_key(key)
        if name in names and name in used and not isinstance(value, list) \
                and not same_value(value, used[name]):
            complaints.append(f"{name}: the server would use {used[name]}, not {value}")
    return complaints


def _variables_table(help_text: str) -> dict[str, str]:
    """The `--verbose --help` table of variables and the values the options give them."""
    out, table = {}, False
    for line in help_text.splitlines():
        if line.startswith("Variables (--variable-name=value)"):
            table = True
        elif table and line and not line.startswith(("-", "and boolean")):
            name, _, value = line.partition(" ")
            out[norm_key(name)] = value.strip()
    return out


_SUFFIX = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}
_BOOL = {"on": True, "true": True, "1": True, "yes": True,
         "off": False, "false": False, "0": False, "no": False}


def same_value(asked: Any, used: str) -> bool:
    """Whether the value a setting asked for is the one the server shows (sizes with K/M/G
    suffixes, booleans in any spelling, numbers numerically; a bare option counts as ON).

    >>> same_value("16M", "16777216"), same_value(True, "TRUE"), same_value(7, "2")
    (True, True, False)
    >>> same_value("maybe", "TRUE"), same_value("O_DIRECT", "O_DIRECT"), same_value(120, "99.999")
    (False, True, False)
    >>> same_value("127.0.0.1", "127.0.0.1"), same_value("10", "10.000000")
    (True, True)
    >>> same_value("mrr=on", "index_merge=on,mrr=on"), same_value("mrr=on", "index_merge=on,mrr=off")
    (True, False)
    """
    a, u = ("on" if asked is None else str(asked)).strip().lower(), used.strip().lower()
    if re.fullmatch(r"[a-z_]+=[a-z]+(,[a-z_]+=[a-z]+)*", a):  # flags (optimizer_switch): each one set
        return set(a.split(",")) <= set(u.split(","))
    if u in ("true", "false"):
        return _BOOL.get(a) == (u == "true")
    number = re.fullmatch(r"(-?\d+(?:\.\d+)?)([kmgt]?)", a)
    if number and re.fullmatch(r"-?\d+(?:\.\d+)?", u):
        value = float(number.group(1)) * _SUFFIX.get(number.group(2).upper(), 1)
        return abs(value - float(u)) <= 1e-9 * max(1.0, abs(value))
    return a == u


def disk_use(flavour: Flavour) -> int:
    """Bytes the flavour's rootfs (tarball + tree) takes; 0 for the host's binaries and a
    directory's (the user's own)."""
    if flavour.source != "rootfs":
        return 0
    return rootfs.disk_usage(flavour)
