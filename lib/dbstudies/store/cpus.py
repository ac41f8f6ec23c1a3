"""Where a run's server and client run: the CPUs they are pinned to (`server_cpus`,
`client_cpus`; a smoke run pins both to one), whether they share them, and how many CPUs
they could use between them — what the caveats and the CPU budget judge saturation by.
"""
from __future__ import annotations

import os
from typing import Any

from .. import servers

# A smoke run checks the machinery in seconds, not the host: its server (and sysbench) run on
# one CPU, the first this process may use, so that a smoke step takes one core whatever else
# runs beside it (the suite runs three at once on two cores; measured: the README's smoke run
# 95 → 73 CPU-s pinned, latency's 64 → 40, the same wall time). Server and client then share
# that CPU, as the caveats say (`cpus_shared`, `pinned_apart`).
SMOKE_CPU = str(min(os.sched_getaffinity(0)))


def _pinned(p: Any) -> tuple[set[int] | None, set[int] | None]:
    """The CPUs the run (its parameters `p`) pinned its server and its client to (None: unpinned)."""
    return tuple(set(servers.parse_cpus(v)) if (v := getattr(p, k, None)) else None
                 for k in ("server_cpus", "client_cpus"))  # type: ignore[return-value]


def pinned_apart(p: Any) -> bool:
    """Whether the run (its parameters `p`) pinned server and client to CPUs of their own
    (a smoke run pins both to one: they share it).

    >>> from types import SimpleNamespace as P
    >>> [pinned_apart(P(server_cpus=s, client_cpus=c)) for s, c in [("0-1", "2"), ("0", "0"), ("0-1", "1"), ("0", None)]]
    [True, False, False, False]
    """
    server, client = _pinned(p)
    return bool(server and client and not server & client)


def cpus_shared(p: Any, host_cpus: int) -> int:
    """How many CPUs server and client could use between them: the host's, or where both are
    pinned the CPUs of their lists together (a smoke run's one: saturated at 100 %, not at the
    host's 200 %).

    >>> from types import SimpleNamespace as P
    >>> [cpus_shared(P(server_cpus=s, client_cpus=c), 2) for s, c in [("0", "0"), ("0", "1"), ("0", None), (None, None)]]
    [1, 2, 2, 2]
    """
    server, client = _pinned(p) if p is not None else (None, None)
    return len(server | client) if server and client else host_cpus


def check_cpus(name: str, spec: str | None) -> list[str]:
    """A taskset CPU list whose CPUs this process may use (None: no pinning)."""
    if spec is None:
        return []
    try:
        cpus = servers.parse_cpus(spec)
    except ValueError as e:
        return [f"{name}: {e}"]
    usable = os.sched_getaffinity(0)
    if not set(cpus) <= usable:
        return [f"{name}: CPUs {sorted(set(cpus) - usable)} are not available (have {sorted(usable)})"]
    return []
