"""Latency at a fixed offered load: what p99 users see at a given transaction rate, and how
much load each configuration takes while p99 stays under a target (modelled on the
thread-pool sources' case at high concurrency, measured open-loop: no coordinated omission).

Arms: the schedulers on each server of `flavours`, as in the thread-pool study (the pool
where the flavour has one) — or, given `configs`, named configurations as in the
checkpoint-stall study (each its settings, intents and flavour; the first is the baseline).
The measurement has two phases, both in paired rounds (all
servers up, the arms of a cell back to back):

1. **Peak phase**: every arm closed-loop at `threads` connections for `duration` seconds per
   workload — its peak transactions/s (recorded, compared like the thread-pool study's).
2. **Offered load**: each level of `loads` (fractions of the *baseline's* closed-loop peak, so
   every arm gets the same absolute rate) or of `rates` (transactions/s), and
   `capacity_levels` more placed from the peak phase around where the baseline's p99 is
   expected to cross the target (`levels.ladder`), open-loop: Poisson
   (or constant, `arrivals`) arrivals served by `threads` connections, every transaction timed
   from its scheduled start (`dbs_openloop.lua`). A level an arm could not keep up with is
   marked not sustained: its latency is a lower bound and is never compared as a number.

The headline is the capacity at `p99_target_ms`: per round, the highest offered rate whose
p99 stays under the target (log-interpolated between the two levels around the crossing);
arms are compared on it by their per-round ratios. Per level up to 0.7 of the peak, p99 and
p50 of every arm are compared with the baseline (one Holm family per metric); above it a
small difference in capacity is amplified in p99 by 1/(1 − load) and the capacity answers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ...core import comparisons as C
from ...kit import studykit as S
from ...kit import thread_handling as sch
from ...kit.contract import Answer
from ...measure.steps import SysbenchStudy
from ...observe import pauses
from ...store import params as P
from ...workloads import sysbench
from . import levels as L

if TYPE_CHECKING:
    import pandas as pd

    from ...store.results import Run

WORKLOADS = ("oltp_point_select", "oltp_read_only", "oltp_read_write")
GOVERNING = sch.GOVERNING  # shown in the report's settings table


@dataclass(frozen=True, kw_only=True)
class Params(pauses.PositiveControl, S.MultiServerParams):
    """The study's parameters (its README.md: what each means, per profile). `threads`: the
    connections serving the offered load (and the peak phase's closed-loop threads)."""
    ANALYSIS: ClassVar[frozenset[str]] = S.StudyParams.ANALYSIS | {"p99_target_ms"}  # re-analysable
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "flavour": "server flavour of the baseline (`env/servers/<flavour>.toml`)",
        "repeats": "paired rounds of each phase (the closed-loop peak, then offered load); ≥ 2 for a verdict",
        "seed": "random seed: order of pairs and cells, sysbench `--rand-seed`, the arrival schedule",
        "aa_control": "also measure the baseline a second time, as its own arm (A/A control)",
        "server_cpus": "`taskset` CPU list for the server (e.g. `0-11`; smoke: the first CPU, shared with sysbench)",
        "budget": "not used here: each phase runs `repeats` rounds (leave unset)",
        "design": (
            "`paired` (every arm on a server of its own, the arms of a cell back to back) or "
            "`blocks`"),
        "restart_every": "paired design: every this many rounds all servers are restarted and warmed up",
        "workloads": "sysbench OLTP workloads",
        "threads": (
            "one value: the connections that serve the offered load (and the peak phase's "
            "closed-loop threads)"),
        "warehouses": "not used (OLTP workloads only)",
        "nodes": "not used (OLTP workloads only)",
        "duration": "seconds of each step (the peak phase and every offered level)",
        "client_cpus": "`taskset` CPU list for sysbench (e.g. `12-15`; smoke: the server's CPU)",
        "flavours": "the servers measured, `flavour` among them (as in the thread-pool study)",
        "schedulers": "`thread_handling` values compared; the pool gets `thread_pool_size` = server CPUs",
        "loads": (
            "offered levels as fractions of the **baseline's** median closed-loop peak (the same "
            "absolute rate for every arm); at most 3"),
        "rates": "offered levels in transactions/s instead (then `loads` is ignored)",
        "arrivals": "`poisson` (exponential gaps) or `constant` (evenly spaced)",
        "p99_target_ms": "the capacity is the highest offered rate whose p99 stays under this",
        "capacity_levels": (
            "this many levels more, placed from the peak phase around where the baseline's p99 "
            "is expected to cross `p99_target_ms` (a ladder ×2 apart in headroom below the peak), so "
            "that every round brackets the target; 0: `loads` (or `rates`) alone"),
        "configs": (
            "named configurations as the arms instead of the schedulers, as in the checkpoint-stall"
            " study: `{\"base\": {}, \"bp 1G\": {\"buffer_pool\": \"1G\"}}` (intents or server variables, "
            "and an optional `flavour` each; the first is the baseline; `flavours` stays the "
            "baseline's alone)"),
    }
    schedulers: list[str]
    loads: list[float]
    rates: list[float] | None = None
    arrivals: str = "poisson"
    p99_target_ms: float = 10.0
    capacity_levels: int = 0
    configs: dict | None = None  # named configurations as the arms, instead of the schedulers
    WORKLOADS: ClassVar[tuple[str, ...]] = WORKLOADS
    RESERVED: ClassVar[frozenset[str]] = frozenset({"thread_handling", "thread_pool_size"})
    # per offered level (a fraction of the peak, or a rate); no precision target: its levels
    # come from its peak phase, during the run
    COMPARISONS: ClassVar[tuple[C.Comparison, ...]] = tuple(
        C.Comparison(name, f"ol_{L.PERCENTILES[name]}", False, f"{name} per offered level",
                     by=("workload", "threads", "level"), target=False) for name in ("p99", "p50"))

    def check(self) -> list[str]:
        if self.configs is None:
            problems = sch.schedulers_problems(self, self.schedulers)
        else:
            problems = S.configs_problems("configs", self.configs, self.flavour)
            if self.flavours != [self.flavour]:
                problems.append(f"flavours: with `configs`, each configuration names its own "
                                f"`flavour` (default: {self.flavour}); got flavours {self.flavours}")
        if len(self.threads) != 1:
            problems.append(f"threads: one connection count serves the offered load, got {self.threads}")
        levels = self.rates if self.rates else self.loads
        name = "rates" if self.rates else "loads"
        if not levels or len(set(levels)) != len(levels) or not all(
                isinstance(x, (int, float)) and x > 0 for x in levels):
            problems.append(f"{name}: need distinct positive levels, got {levels}")
        elif not self.rates and max(levels) > 3:
            problems.append(f"loads: fractions of the baseline's peak (0.5 = half), at most 3, "
                            f"got {levels}; absolute transactions/s go in `rates`")
        problems += P.check_choices("arrivals", [self.arrivals], sysbench.ARRIVALS)
        if not self.p99_target_ms > 0:
            problems.append(f"p99_target_ms: must be > 0, got {self.p99_target_ms}")
        if not (isinstance(self.capacity_levels, int) and 0 <= self.capacity_levels <= L.MAX_LADDER):
            problems.append(f"capacity_levels: 0 … {L.MAX_LADDER} levels placed around the expected "
                            f"capacity, got {self.capacity_levels!r}")
        if self.budget is not None:
            problems.append("budget: the latency study measures `repeats` rounds of each phase; "
                            "leave budget unset")
        return problems

    def servers(self) -> list[str]:
        """The flavours started: the configurations' (given `configs`), else `flavours`."""
        if self.configs is None:
            return super().servers()
        return S.config_servers(self.configs, self.flavour)

    def levels(self) -> list[float]:
        """The offered-load levels given, in order: transactions/s, or fractions of the peak
        (the `capacity_levels` placed from the peak phase come on top)."""
        return sorted(self.rates or self.loads)


_COMMON = dict(flavours=["mariadb-10.11"], schedulers=list(sch.SCHEDULERS), warehouses=10,
               nodes=1_000_000)
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(_COMMON, workloads=["oltp_point_select"], threads=[8], tables=1, table_size=1000,
                  warehouses=1, nodes=10_000, warmup=1, duration=2, repeats=2, loads=[0.3, 1.5],
                  p99_target_ms=50.0, restart_every=2),
    # ≈ 17 min here: 64 connections, 3 levels for the latency verdicts and 4 placed around
    # the expected capacity, 5 rounds
    "quick": dict(_COMMON, workloads=["oltp_read_only"], threads=[64], tables=4, table_size=100_000,
                  warmup=5, duration=10, repeats=5, loads=[0.25, 0.5, 0.7], capacity_levels=4,
                  p99_target_ms=20.0),
    "full": dict(_COMMON, workloads=["oltp_point_select", "oltp_read_only"], threads=[256], tables=16,
                 table_size=1_000_000, warmup=30, duration=30, repeats=10,
                 loads=[0.2, 0.4, 0.6, 0.7], capacity_levels=6,
                 settings={"innodb_buffer_pool_size": "5G"}),
}


# ---------------------------------------------------------------- analysis


# the capacity first; the closed-loop peak, which sets the levels, last
VERDICTS = {"capacity at the p99 target": "capacity_rel", **C.verdicts(Params.COMPARISONS),
            "closed-loop peak (transactions/s)": "peak"}


class Latency(SysbenchStudy[Params]):
    """The sysbench kind's loop (its steps at an offered rate: `DBSTUDIES_RATE`), with the
    offered levels as a follow-up of its peak phase."""
    Params, PROFILES, GOVERNING = Params, PROFILES, GOVERNING

    def describe(self, p: Params, steps: int) -> str:
        """The plan in one line (`schedule.describe`), `steps` long."""
        arms_, levels = S.with_control(self.arms(p), p), p.levels()
        return (f"{p.repeats} rounds × {len(arms_)} arms ({', '.join(a.label for a in arms_)}): "
                f"the closed-loop peak, then {len(levels)} offered levels ({', '.join(f'{x:g}' for x in levels)}"
                f"{' tx/s' if p.rates else ' × the baseline peak'})"
                + (f" and {p.capacity_levels} placed around the expected capacity" if p.capacity_levels else ""))

    def arms(self, p: Params) -> list[S.Arm]:
        """One arm per configuration (given `configs`, the first the baseline), else one per
        server × scheduler it has, the baseline (one-thread-per-connection on `flavour`) first."""
        if p.configs is not None:
            return S.config_arms(p.configs, p.flavour)
        return sch.scheduler_arms(p, p.schedulers)

    def not_available(self, p: Params) -> list[tuple[str, str]]:
        """(arm, flavour) of the schedulers a server cannot run (none with `configs`)."""
        return [] if p.configs is not None else sch.schedulers_unavailable(p, p.schedulers)

    def follow_up(self, run: "Run", p: Params) -> list[dict[str, Any]]:
        """The offered-load cells, from the peak phase the plan measured: per workload, each
        level as a rate (a fraction of the baseline's median peak transactions/s, or `rates`)."""
        return L.load_cells(run, p, self.arms(p)[0].label)

    def block_seconds(self, p: Params) -> float:
        """One round per arm: the peak-phase cells now, the offered-load cells after (the
        follow-up); both are counted so the estimate covers the whole run."""
        cells = len(p.workloads) * (1 + len(p.levels()) + p.capacity_levels)
        return p.warmup + cells * (p.duration + S.STEP_OVERHEAD)

    def table_cells(self, p: Params) -> list[dict[str, Any]]:
        """The cells of the per-level verdict tables (what `dbstudies plan` predicts): workload ×
        connections × level (a fraction of the peak up to `levels.VERDICT_LOAD`, or
        transactions/s with `rates`)."""
        return [{"workload": w, "threads": t, "level": x} for w in p.workloads for t in p.threads
                for x in p.levels() if p.rates or x <= L.VERDICT_LOAD]

    def observations(self, run: "Run", p: Params) -> "pd.DataFrame":
        """What its comparisons judge (`dbstudies plan`, a replication): the sustained offered
        levels up to `levels.VERDICT_LOAD`, keyed by the level (a fraction of the peak stays
        comparable between runs whose peaks differ)."""
        _, loaded = L.split(run)
        loaded = loaded[loaded["ol_sustained"].astype(bool)]  # a lower bound is no observation
        loaded = loaded[~(loaded["load"] > L.VERDICT_LOAD)]   # no latency verdict above 0.7 of the peak
        return loaded.assign(level=loaded["load"].fillna(loaded["rate"]))

    def sweep_steps(self, run: "Run", p: Params) -> "pd.DataFrame":
        """What a sweep shows of a run side by side: the offered-load steps, a panel per
        workload × level (a fraction of the peak: runs with different peaks stay comparable),
        their p99 from the scheduled start — none where the level was not sustained (a lower
        bound is no figure)."""
        _, loaded = L.split(run)
        order = {label: k for k, label in enumerate(run.record.labels)}  # baseline first
        loaded = loaded.assign(_arm=loaded["arm"].map(order)).sort_values(
            ["load", "rate", "_arm", "step"]).drop(columns="_arm")
        label = [f"{w} at {x * 100:.0f} % of peak" if x == x else f"{w} at {r:,.0f}/s"
                 for w, r, x in zip(loaded["workload"], loaded["rate"], loaded["load"])]
        return loaded.assign(workload=label, latency_p99_ms=loaded[f"ol_{L.PERCENTILES['p99']}"]
                             .where(loaded["ol_sustained"].astype(bool)))

    def tables(self, run: "Run", p: Params) -> dict[str, "pd.DataFrame"]:
        """The study's tables from the run: the peak phase (peak per arm), per level, the
        comparisons per level on p99 and p50, and the capacity at the target."""
        return L.tables(run, p, S.with_control(self.arms(p), p), self.not_available(p))

    def conclusion(self, t: dict[str, "pd.DataFrame"], p: Params) -> str:
        """A short Markdown conclusion computed from the tables (no claim is hard-coded)."""
        return L.conclusion(t, p, S.with_control(self.arms(p), p))

    def answer(self, run: "Run", p: Params) -> Answer:
        """What the run answers (`tables`): the peak phase's peaks, the offered levels, p99 and
        p50 per level and the capacity at the p99 target against the baseline, and the
        conclusion."""
        t = self.tables(run, p)
        return Answer(t, dict(VERDICTS), self.conclusion(t, p), comparisons=p.COMPARISONS,
                      headline=L.headline(t, p, S.with_control(self.arms(p), p)))


STUDY = Latency()
