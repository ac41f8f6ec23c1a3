"""The servers' settings as a run recorded them: what every report shows, what was aligned
like for like (`servers.ALIGNED`), and what still differs between arms — which the verdicts
include, whatever the study meant to vary.

Read from `metadata.json` only: each arm's server's `SHOW GLOBAL VARIABLES` (with the
settings its sessions set on a shared server laid over them).
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Union

from .. import servers
from . import record
from .params import written

Meta = Union[Mapping[str, Any], record.Record]  # a run's record, or its metadata as written

# the server variables every report shows (where a server has them)
AIO_SAID = "aio (as InnoDB says at start)"  # the backend the error log names (`servers.aio_backend`), beside the variable
KEY_VARIABLES = ("version", "thread_handling", "thread_pool_size", "max_connections",
                 "innodb_buffer_pool_size", "innodb_log_file_size", "innodb_redo_log_capacity",
                 "innodb_use_native_aio", AIO_SAID, "gtid_mode",
                 "innodb_flush_log_at_trx_commit", "innodb_flush_method", "innodb_doublewrite",
                 "innodb_io_capacity", "innodb_io_capacity_max", "innodb_change_buffering",
                 "log_bin", "sync_binlog", "character_set_server", "collation_server",
                 "performance_schema")
# variables that name this machine's paths, ports or identities: never a configuration choice
MACHINE = re.compile(r"dir$|file|path|socket|port$|^pid|server_id|server_uu?id|hostname|"
                     r"^version_|_host$|secure_file_priv|^gtid|timestamp|^log_error|^relay_log|"
                     r"^ssl_|^have_", re.I)
# sizes of what a server turned off: they do nothing (performance_schema = OFF everywhere)
IDLE_WHEN_OFF = {"performance_schema": "performance_schema_"}


def size_text(v: Any) -> str:
    """4294967296 → '4 GiB'; what is not a whole number of KiB stays as it is.

    >>> size_text(4294967296), size_text(16777216), size_text(1000), size_text("x")
    ('4 GiB', '16 MiB', '1000', 'x')
    """
    try:
        n = int(v)
    except (TypeError, ValueError):
        return str(v)
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size and n % (size // 16 or 1) == 0:
            return f"{n / size:g} {unit}"
    return str(n)


def bytes_text(n: float) -> str:
    """A measured size, in one unit chosen by its magnitude, 3 significant digits.

    >>> bytes_text(41336832), bytes_text(278528), bytes_text(11534336), bytes_text(512), bytes_text(3 * 2**30)
    ('39.4 MiB', '272 KiB', '11 MiB', '512 B', '3 GiB')
    """
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def share_of(part: float, whole: float, what: str) -> str:
    """'≈ 2.8 × its buffer pool', '31 % of …', 'under 1 % of …'.

    >>> share_of(7.6e-06, 1, "x"), share_of(0.31, 1, "x"), share_of(2.84, 1, "x")
    ('under 1 % of x', '31 % of x', '2.8 × x')
    """
    r = part / whole
    return f"under 1 % of {what}" if r < 0.01 else f"{r * 100:.0f} % of {what}" if r < 1 else f"{r:.2g} × {what}"


def shown(name: str, value: str | None) -> str:
    """A recorded variable's value as a reader wants it: sizes in KiB/MiB/GiB, a decimal
    without its trailing zeros (MariaDB's "90.000000" is 90), "—" for none.

    >>> shown("innodb_max_dirty_pages_pct", "90.000000"), shown("x", "0.500"), shown("innodb_log_file_size", "16777216")
    ('90', '0.5', '16 MiB')
    """
    if not value:
        return "—"
    if re.fullmatch(r"-?\d+\.\d+", value):
        return value.rstrip("0").rstrip(".")
    return size_text(value) if name.endswith(("_size", "_capacity")) else value


def knobs(h: dict[str, Any]) -> str:
    """The kernel settings a comparison silently depends on (`provenance.kernel_knobs`), in
    words ('not recorded' for a run from before they were).

    >>> knobs({"io_uring_disabled": 0, "cpu_governor": None, "transparent_hugepages": "madvise"})
    'io_uring allowed (kernel.io_uring_disabled = 0) · CPU governor not exposed · transparent huge pages: madvise'
    """
    if "io_uring_disabled" not in h:
        return "not recorded"
    uring = h["io_uring_disabled"]
    said = {0: "allowed", 1: "allowed to one group", 2: "disabled"}.get(uring, "unknown")
    return (f"io_uring {said} (kernel.io_uring_disabled = {uring if uring is not None else '?'}) · "
            f"CPU governor {h.get('cpu_governor') or 'not exposed'} · "
            f"transparent huge pages: {h.get('transparent_hugepages') or 'not exposed'}")


def arm_variables(meta: Meta) -> dict[str, dict[str, str]]:
    """Per arm (in the run's order): its server's global variables, with the settings its
    sessions set on a shared server laid over them."""
    r = record.of(meta)
    by_label = {s.label: s for s in r.servers}
    out = {}
    for arm in r.arms:
        server = by_label.get(arm.label)
        if server:
            out[arm.label] = {**{k.lower(): str(v) for k, v in server.global_variables.items()},
                              **{k.lower(): str(v) for k, v in server.session.items()},
                              **({AIO_SAID: str(server.aio)} if server.aio else {})}
    return out


def same(values: list[str | None]) -> bool:
    """Whether recorded values are one value, however spelled ("10" and "10.000000").

    >>> same(["10", "10.000000"]), same(["ON", "ON"]), same(["200", "10000"]), same(["1", None])
    (True, True, False, False)
    """
    if any(v is None for v in values):
        return len(set(values)) == 1
    return all(servers.same_value(values[0], v) for v in values[1:])


def aligned(meta: Meta) -> list[str]:
    """The variables a like-for-like run said the same on every server (`servers.ALIGNED`,
    each shown by its `SHOWN_AS` variable); [] for a run with `align = "defaults"`, one with a
    remote server (dbstudies does not configure it), and runs recorded before alignment."""
    r = record.of(meta)
    if written(r.raw).get("align") != "intent" or any(s.remote for s in r.servers):  # a remote server is as it runs
        return []
    return [servers.SHOWN_AS[f] for f in servers.ALIGNED.asdict() if f in servers.SHOWN_AS]


def differences(meta: Meta) -> list[tuple[str, list[str | None]]]:
    """(variable, values per arm) for every configuration variable all arms' servers have and
    whose values differ (machine paths, ports and identities left out), key variables first."""
    per_arm = arm_variables(meta)
    if len(per_arm) < 2:
        return []
    common = set.intersection(*(set(v) for v in per_arm.values()))
    for switch, prefix in IDLE_WHEN_OFF.items():
        if all(v.get(switch, "ON").upper() == "OFF" for v in per_arm.values()):
            common = {n for n in common if not n.startswith(prefix)}
    names = [n for n in KEY_VARIABLES if n in common] + sorted(common - set(KEY_VARIABLES))
    out = []
    for name in names:
        values = [per_arm[a].get(name) for a in per_arm]
        machine = name not in KEY_VARIABLES and MACHINE.search(name)  # innodb_log_file_size is no file
        if not machine and name != "version" and not same(values):
            out.append((name, values))
    return out


def differences_line(meta: Meta, listed: int = 12) -> str:
    """The Answer's sentence on the settings that differ between arms (Markdown): what the
    arms vary on purpose, said as that, then what else still differs — which the verdicts
    include — or that nothing else does. "" with fewer than two arms' servers recorded.
    The varied factor is never listed as a difference."""
    arms = list(arm_variables(meta))
    if len(arms) < 2:
        return ""
    asked = varied(meta)
    diff = differences(meta)
    own = [(n, v) for n, v in diff if n in asked]
    other = [(n, v) for n, v in diff if n not in asked]
    between = " and ".join(arms) if len(arms) < 4 else "the arms"
    if not own and not other:
        return ("**No server setting differs between the arms** (every recorded variable alike but "
                "machine paths, ports and identities).")
    head = (f"**{between[0].upper() + between[1:]} differ in what the study varies** — {_named(own)} —"
            if own else f"**Between {between}**,")
    if not other:
        return (f"{head} and in no other server setting (every recorded variable alike but machine "
                "paths, ports and identities).")
    more = [f"`{n}`" for n, _ in other[listed:]]
    return (f"{head} {'and also' if own else ''} {len(other)} setting{'s' if len(other) != 1 else ''} "
            f"the study does not vary still differ{'s' if len(other) == 1 else ''} (the verdicts include "
            f"{'their' if len(other) != 1 else 'its'} effect): {_named(other[:listed])}"
            + (f"; and {', '.join(more)}" if more else "") + ".").replace("  ", " ")


def _named(diff: list[tuple[str, list[str | None]]]) -> str:
    """'`a` (x vs y); `b` (1 vs 2)'."""
    return "; ".join(f"`{n}` ({' vs '.join(dict.fromkeys(shown(n, v) for v in values))})" for n, values in diff)


def varied(meta: Meta) -> set[str]:
    """The settings the run's arms set on purpose (any arm's `settings`)."""
    return {k for a in record.of(meta).arms for k in a.settings}


def beyond_varied(meta: Meta, listed: int = 5) -> str:
    """The Answer's caveat on settings that differ between arms beyond those the arms set on
    purpose (Markdown; "" when none does): the verdicts include their effect."""
    asked = varied(meta)
    diff = [(n, v) for n, v in differences(meta) if n not in asked]
    if not diff:
        return ""
    arms = list(arm_variables(meta))
    more = len(diff) - listed
    return (f"**Settings differ beyond what the study varies**: {len(diff)} between "
            f"{' and '.join(arms) if len(arms) < 4 else 'the arms'} — {_named(diff[:listed])}"
            + (f" and {more} more (all under “Design and set-up”)" if more > 0 else "")
            + ". The verdicts include their effect.")


def between_runs(meta_a: Meta, meta_b: Meta) -> list[tuple[str, str, str | None, str | None]]:
    """(arm, variable, run A's value, run B's) for every configuration variable an arm's
    servers in both runs have and whose values differ — what differs between the set-ups of
    two runs of a study (machine paths, ports and identities left out; key variables first)."""
    a, b = arm_variables(meta_a), arm_variables(meta_b)
    out = []
    for arm in [x for x in a if x in b]:
        common = set(a[arm]) & set(b[arm])
        for name in [n for n in KEY_VARIABLES if n in common] + sorted(common - set(KEY_VARIABLES)):
            machine = name not in KEY_VARIABLES and MACHINE.search(name)
            pair = [a[arm].get(name), b[arm].get(name)]
            if not machine and not same(pair):
                out.append((arm, name, *pair))
    return out
