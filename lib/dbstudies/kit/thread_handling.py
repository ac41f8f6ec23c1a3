"""The schedulers as arms: one-thread-per-connection and the thread pool, each said as an
intent in every flavour's dialect (the thread-pool, versions and latency studies); a pool
that a flavour lacks is a cell "not available", never an error."""
from __future__ import annotations

from .. import servers
from ..store import params as P
from .studykit import Arm, MultiServerParams, flavour_label

PER_CONNECTION, POOL = "one-thread-per-connection", "pool-of-threads"
SCHEDULERS = (PER_CONNECTION, POOL)
# what governs either scheduler, shown in a report's settings table (a study's `GOVERNING`):
# the pool's groups, stall limit, oversubscription, thread cap and idle timeout; the
# per-connection scheduler's thread cache; both: the connection limit
GOVERNING = ("thread_handling", "thread_pool_size", "thread_pool_stall_limit", "thread_pool_oversubscribe",
             "thread_pool_max_threads", "thread_pool_idle_timeout", "thread_cache_size", "max_connections")


def scheduler_intent(scheduler: str, server_cpus: int) -> servers.Intent:
    """What a scheduler asks of the server; the pool gets one group per server CPU."""
    if scheduler == POOL:
        return servers.Intent(thread_pool=True, thread_pool_size=server_cpus)
    return servers.Intent(thread_pool=False)


def lacks_pool(flavour: str) -> str | None:
    """Why `flavour` cannot run the pool (its dialect says), or None when it can."""
    return servers.load_flavour(flavour).unavailable(scheduler_intent(POOL, 1))


def scheduler_label(p: "MultiServerParams", flavour: str, scheduler: str, schedulers: list[str]) -> str:
    """An arm's name: its scheduler with one server, its server with one scheduler, else both."""
    if len(p.flavours) == 1:
        return scheduler
    return flavour_label(flavour) if len(schedulers) == 1 else f"{flavour_label(flavour)} · {scheduler}"


def scheduler_arms(p: "MultiServerParams", schedulers: list[str]) -> list[Arm]:
    """One arm per server × scheduler it has; the baseline (the baseline server's
    first scheduler) first, each named by `scheduler_label`."""
    order = sorted(schedulers, key=SCHEDULERS.index)
    return [Arm(scheduler_label(p, f, s, schedulers), intent=scheduler_intent(s, p.server_cpu_count), flavour=f)
            for f in p.servers() for s in order if s != POOL or not lacks_pool(f)]


def schedulers_unavailable(p: "MultiServerParams", schedulers: list[str]) -> list[tuple[str, str]]:
    """(arm label, flavour) of each server × scheduler that cannot be measured: the pool on
    a flavour without one (MySQL community)."""
    return [(scheduler_label(p, f, POOL, schedulers), f) for f in p.servers()
            if POOL in schedulers and lacks_pool(f)]


def schedulers_problems(p: "MultiServerParams", schedulers: list[str]) -> list[str]:
    """Unknown schedulers, bad flavours, and a pool asked of servers none of which has one."""
    problems = P.check_choices("schedulers", schedulers, SCHEDULERS)
    bad = p.flavour_problems()
    if not bad and POOL in schedulers and all(lacks_pool(f) for f in p.flavours):
        bad.append(f"schedulers: none of {', '.join(p.flavours)} has a thread pool")
    return problems + bad
