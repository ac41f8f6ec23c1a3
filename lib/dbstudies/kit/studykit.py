"""The parts studies are built from: the parameters every study shares (`StudyParams`,
`SysbenchParams`, `MultiServerParams`, `CpuProfiled` — each with what its parameters mean,
`MEANINGS`, for the study READMEs' tables and `dbstudies list`), their checks, and the arms a study
compares (`Arm`, whose home is `arms`; named configurations, schedulers, the A/A twin).

A study's `__init__` imports this module as `S` (docs/writing-a-study.md); what a study is —
its kind's class, whose methods are the hooks — is `dbstudies.kit.contract`'s, finding and
loading studies `dbstudies.kit.study`'s.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from .. import servers, workloads
from ..core import comparisons as C
from ..core import errors
from ..store import params as P
from ..store.cpus import SMOKE_CPU, check_cpus

# the arms, as a study's kit names them (`S.Arm`, `S.config_arms` …); their home is `arms`
from .arms import AA_SUFFIX as AA_SUFFIX
from .arms import INTENTS as INTENTS
from .arms import Arm as Arm
from .arms import arms_of as arms_of
from .arms import config_arms as config_arms
from .arms import config_servers as config_servers
from .arms import flavour_label as flavour_label
from .arms import split_config as split_config
from .arms import with_control as with_control

# settings the driver owns: no study parameter may override them
DRIVER_SETTINGS = frozenset({"datadir", "socket", "port", "bind_address", "pid_file",
                             "log_error", "user"})
DESIGNS = ("paired", "blocks")  # experiment: rounds of adjacent pairs, or blocks per fresh start
MAX_WAREHOUSES = 10_000
STEP_OVERHEAD = 0.6        # sysbench start-up and teardown around --time


@dataclass(frozen=True, kw_only=True)
class StudyParams:
    """What every study has: server flavour, repeats, seed, the verdict's draw threshold,
    the A/A control, server pinning and extra my.cnf settings."""
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "flavour": "server flavour (`env/servers/<flavour>.toml`)",
        "repeats": (
            "paired rounds (blocks per arm with `design` blocks); ≥ 2 for a verdict to be possible;"
            " with a `target`: the rounds every cell gets first (≥ 3); see Statistics"),
        "seed": "random seed: order of blocks and steps, sysbench `--rand-seed`",
        "draw_threshold": "a difference below this fraction is a draw",
        "aa_control": "also measure the baseline a second time, as its own interleaved arm (A/A control)",
        "server_cpus": "`taskset` CPU list for the server (smoke: the first CPU, shared with sysbench)",
        "settings": "extra my.cnf settings on top of `env/cnf/base.cnf`",
        "budget": (
            "minutes: measure as many repeats (paired: rounds) as fit in this time, instead of "
            "`repeats` (at least two must fit; `dbstudies plan` says what that buys); 0: none, "
            "`repeats` decides (a profile's budget off)"),
        "design": (
            "`paired`: every arm on a server of its own, all up at once, the arms of a cell "
            "measured back to back in rounds; `blocks`: per repeat, each arm in a block of its own "
            "on a fresh start (see Statistics)"),
        "target": (
            "precision target per comparison table, {metric: fraction}, e.g. `{\"qps\": 0.05, \"p95\": 0.25}`: "
            "the smallest difference the run must be able to detect there. Every cell gets `repeats` "
            "rounds first; then rounds go only to the cells still above their target (fewest rounds "
            "to go first) until every cell meets it or the `budget` (required) cannot take a cell's "
            "rounds; a draw then reads *the same* (inside the draw threshold), *within the target* or *inconclusive* (see Statistics)"),
        "restart_every": (
            "paired design: every this many rounds all servers are restarted and warmed up, so that"
            " start-to-start variance stays in the estimate"),
        "replicate": (
            "a run (directory or `dbstudies pack` archive) to measure again with its parameters, "
            "workload scripts and server flavours: did its answer hold? (docs/running.md)"),
        "align": (
            "`intent`: like for like — every server gets the same binary log (off), sync, redo "
            "flush at commit, doublewrite, character set and collation, I/O capacity, change "
            "buffering, performance_schema and buffer pool, each said in its own dialect (see "
            "Comparing like for like); `defaults`: each server as it ships"),
    }
    profile: str
    flavour: str = "mariadb-10.11"   # Debian bookworm's server: installed by `make setup`
    repeats: int
    seed: int = 1
    draw_threshold: float = 0.05     # |Δ| below 5 % is a draw
    aa_control: bool = False
    server_cpus: str | None = None
    settings: dict = field(default_factory=dict)
    budget: float | None = None  # minutes: as many repeats (rounds) as fit, instead of `repeats`
    design: str = "blocks"       # "paired" (rounds of adjacent pairs) | "blocks" (experiment)
    restart_every: int = 1       # paired: restart (and warm up) every server every this many rounds
    target: dict = field(default_factory=dict)  # {metric: fraction}: measure each cell until it can tell that
    align: str = "intent"        # "intent": like for like (servers.ALIGNED) | "defaults": as shipped
    replicate: str | None = None  # a run (directory or archive) whose parameters this run measures again
    RESERVED: ClassVar[frozenset[str]] = frozenset()  # settings the study itself owns
    # what a profile changes for every study (under each study's own PROFILES): see SMOKE_CPU
    PROFILE_DEFAULTS: ClassVar[dict[str, dict[str, Any]]] = {"smoke": {"server_cpus": SMOKE_CPU}}
    # parameters only the analysis reads: a finished run re-analysed at other values of these
    # gets a variant of its own (`Run.as_variant`); every other parameter is the run's
    ANALYSIS: ClassVar[frozenset[str]] = frozenset({"draw_threshold"})
    # a run recorded before these existed did not use them: read back at their default, not at
    # today's profile value (`params.recorded`)
    PREDATED: ClassVar[frozenset[str]] = frozenset({"target", "budget"})
    # paired design: whether the study's steps give their arm's settings to each session, so
    # that arms of one flavour without an intent share a server (schedule.server_key)
    SHARED_SERVER: ClassVar[bool] = False
    # the study's comparison tables, each declared once (`comparisons`)
    COMPARISONS: ClassVar[tuple[C.Comparison, ...]] = ()

    def analysis_changes(self, recorded: "StudyParams") -> dict[str, Any]:
        """The analysis parameters (`ANALYSIS`) whose values here differ from a run's
        `recorded` ones (`Run.params`: one the run predates at its default, which the run was
        analysed with): name → value here (what a re-analysis variant is named by)."""
        def text(v: Any) -> str:
            return json.dumps(v, default=str, sort_keys=True)
        return {k: getattr(self, k) for k in sorted(self.ANALYSIS)
                if text(getattr(self, k)) != text(getattr(recorded, k))}

    def validate(self) -> list[str]:
        """Every problem of these parameters: the shared checks, then the study's `check`."""
        return self.shared_problems() + self.check()

    def shared_problems(self) -> list[str]:
        problems = check_flavour("flavour", self.flavour)
        problems += P.check_min(self, repeats=1, seed=0)
        if not 0 <= self.draw_threshold < 1:
            problems.append(f"draw_threshold: must be in [0, 1), got {self.draw_threshold}")
        if self.budget is not None and not self.budget >= 0:
            problems.append(f"budget: minutes > 0 (or 0: none, `repeats` decides), got {self.budget}")
        problems += check_cpus("server_cpus", self.server_cpus)
        if self.design not in DESIGNS:
            problems.append(f"design: one of {', '.join(DESIGNS)}, got {self.design!r}")
        problems += P.check_min(self, restart_every=1)
        if self.align not in servers.ALIGN:
            problems.append(f"align: one of {', '.join(servers.ALIGN)} (like for like, or each server "
                            f"as it ships), got {self.align!r}")
        owned = DRIVER_SETTINGS | self.RESERVED
        clash = sorted(owned & {servers.norm_key(k) for k in self.settings})
        if clash:
            problems.append(f"settings: {clash} are set by the driver or the study, not here")
        return problems + settings_problems("settings", self.settings, self.servers())

    def servers(self) -> list[str]:
        """The flavours this study starts (override when it has several)."""
        return [self.flavour]

    def check(self) -> list[str]:
        """The study's own problems (override)."""
        return []

    @property
    def server_cpu_count(self) -> int:
        """CPUs the server may use: its pinned list, else this machine's."""
        if self.server_cpus:
            return len(servers.parse_cpus(self.server_cpus))
        return len(os.sched_getaffinity(0))


BY = list(C.BY)  # a sysbench study's cell


@dataclass(frozen=True, kw_only=True)
class SysbenchParams(StudyParams):
    """A sysbench study: workloads × client threads, on tables it loads once per server.
    `tables` × `table_size` is the OLTP workloads' scale, `warehouses` the TPC-C-like one's,
    `nodes` the LinkBench-like one's (`workloads.OURS`)."""
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "workloads": (
            "sysbench OLTP workloads, or ours: `tpcc` (TPC-C-like, the source's TPCC-10 case), "
            "`linkbench` (LinkBench-like)"),
        "threads": "client thread counts (1 … 4096)",
        "tables": "sysbench tables",
        "table_size": "rows per table",
        "warehouses": (
            "TPC-C-like scale, when `workloads` holds `tpcc` (≈ 80 MB and ≈ 5 s of prepare per "
            "warehouse here)"),
        "nodes": "LinkBench-like scale, when `workloads` holds `linkbench` (nodes; ≈ 1.4 links each)",
        "warmup": "warm-up seconds after each server start (recorded, discarded; 0 = none)",
        "duration": "measured seconds per step",
        "client_cpus": "`taskset` CPU list for sysbench (smoke: the server's CPU)",
        "workload_options": (
            "options of your own Lua workloads (`workloads` entries ending in `.lua`), e.g. "
            "`{\"--rows\": 1000}` (see Your own workload)"),
        "common_seed": (
            "paired design: the steps of a pair run sysbench with one `--rand-seed` (common random "
            "numbers: every arm draws the same rows and transactions); false: each step its own"),
        "busy_retries": (
            "times a step (paired: its whole pair) that ran on a busy host — other processes over 10 % "
            "of the machine, or the hypervisor's steal over 5 % — is measured again; the discarded "
            "attempts are kept (phase busy); 0: every step kept as measured, flagged busy. Smoke: 0 "
            "(a smoke run checks the machinery; its few seconds are never judged)"),
    }
    # what a profile changes for every study of this kind, under each study's own PROFILES
    PROFILE_DEFAULTS: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {"busy_retries": 0, "server_cpus": SMOKE_CPU, "client_cpus": SMOKE_CPU}}
    workloads: list[str]
    threads: list[int]
    tables: int
    table_size: int
    warehouses: int
    nodes: int
    warmup: int
    duration: int
    client_cpus: str | None = None
    design: str = "paired"
    workload_options: dict = field(default_factory=dict)  # options of script workloads (--name: value)
    # measured again when the host was busy: on these shared 2-vCPU machines steal above 20 %
    # halves a 1-thread step's QPS, and such steps made up most of the run-to-run noise
    # (docs/statistics.md)
    busy_retries: int = 2
    common_seed: bool = False    # paired: one sysbench --rand-seed per pair (common random numbers)
    WORKLOADS: ClassVar[tuple[str, ...]] = ()
    COMPARISONS: ClassVar[tuple[C.Comparison, ...]] = C.SYSBENCH
    SCRIPTS: ClassVar[bool] = True  # whether a workload may be a Lua script of the user's own
    MAX_THREADS: ClassVar[int] = 4096

    def shared_problems(self) -> list[str]:
        problems = super().shared_problems()
        if shutil.which("sysbench") is None:
            problems.append("sysbench is not installed (`make setup` installs it)")
        problems += P.check_min(self, busy_retries=0)
        return problems + self.workload_problems() + self.scale_problems()

    def workload_problems(self) -> list[str]:
        """Unknown workloads; scripts of the user's own that sysbench could not run; options
        that are not options."""
        scripts = [w for w in self.workloads if workloads.is_script(w)]
        allowed = (*self.WORKLOADS, *scripts) if self.SCRIPTS else self.WORKLOADS
        problems = P.check_choices("workloads", self.workloads, allowed)
        if scripts and not self.SCRIPTS:
            problems.append(f"workloads: this study runs only its own workloads ({', '.join(self.WORKLOADS)}), "
                            f"not scripts ({', '.join(scripts)})")
        try:
            given = tuple(workloads.script_options(self.workload_options))
        except ValueError as e:
            problems.append(str(e))
            given = ()
        if scripts and self.SCRIPTS and shutil.which("sysbench"):
            scale = {n: getattr(self, n) for n in ("tables", "table_size")}
            problems += [m for w in scripts
                         for m in workloads.script_problems(w, (*workloads.options(w, scale), *given))]
        if self.workload_options and not scripts:
            problems.append("workload_options: options go to scripts of your own (a workloads entry "
                            "ending in .lua), and there is none")
        return problems

    def scale_problems(self) -> list[str]:
        problems = []
        if not self.threads or len(set(self.threads)) != len(self.threads):
            problems.append(f"threads: need distinct thread counts, got {self.threads}")
        elif not all(1 <= t <= self.MAX_THREADS for t in self.threads):
            problems.append(f"threads: each must be between 1 and {self.MAX_THREADS}, got {self.threads}")
        problems += P.check_min(self, tables=1, table_size=1, warehouses=1, nodes=1, warmup=0, duration=1)
        if self.warehouses > MAX_WAREHOUSES:
            problems.append(f"warehouses: at most {MAX_WAREHOUSES} (TPC-C keys a warehouse in a "
                            f"SMALLINT; one is ≈ 80 MB), got {self.warehouses}")
        return problems + check_cpus("client_cpus", self.client_cpus)

    def cells(self) -> list[dict[str, Any]]:
        """What one block measures: every workload × client thread count."""
        return [{"workload": w, "threads": t} for w in self.workloads for t in sorted(self.threads)]

    def block_seconds(self) -> float:
        """A block's wall-clock estimate: the warm-up, then every cell's step."""
        return self.warmup + len(self.workloads) * len(self.threads) * (self.duration + STEP_OVERHEAD)

    def warmup_seconds(self) -> float:
        """The part of `block_seconds` one arm's warm-up takes."""
        return self.warmup


@dataclass(frozen=True, kw_only=True)
class MultiServerParams(SysbenchParams):
    """A sysbench study over several servers: `flavours`, the baseline `flavour` among them."""
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "flavours": (
            "the servers measured, `flavour` (the baseline's) among them; with several, every "
            "server × scheduler is an arm compared with the baseline, and a pool a flavour lacks "
            "(MySQL community) is a \"not available on mysql-9.7\" cell, e.g. `-p flavours "
            "'[\"mariadb-10.11\",\"mysql-9.7\"]'`"),
    }
    flavours: list[str]

    def servers(self) -> list[str]:
        """The flavours started, the baseline's first."""
        return [self.flavour, *[f for f in self.flavours if f != self.flavour]]

    def flavour_problems(self) -> list[str]:
        labels = [flavour_label(f) for f in self.flavours]
        if not self.flavours or len(set(labels)) != len(labels):
            return [f"flavours: need distinct flavours (by name), got {self.flavours}"]
        problems = [m for f in self.flavours for m in check_flavour("flavours", f)]
        if self.flavour not in self.flavours:
            problems.append(f"flavour: the baseline {self.flavour} must be one of flavours "
                            f"{self.flavours}")
        return problems


def settings_problems(what: str, settings: Mapping[str, Any], flavours: list[str]) -> list[str]:
    """Settings every one of `flavours` must accept: names its server knows and values it
    would use as given — both asked of the server (`--verbose --help`), no list kept here.
    `what` names the parameter in the messages."""
    problems = []
    for name in flavours:
        if check_flavour("flavour", name):
            continue  # reported on its own
        flavour = servers.load_flavour(name)
        unknown = servers.unknown_settings(flavour, settings)
        if unknown:
            problems.append(f"{what}: {unknown} are not options of {name} (its server's "
                            "--verbose --help); `loose_<name>` is passed on unchecked")
        known = {k: v for k, v in settings.items() if servers.norm_key(k) not in unknown}
        problems += [f"{what}: {name} refuses a value: {m}" for m in servers.bad_values(flavour, known)]
    return problems


def check_flavour(name: str, flavour: str) -> list[str]:
    """A known server flavour whose binaries are installed."""
    try:
        servers.check_installed(servers.load_flavour(flavour))
    except (errors.ConfigError, errors.ServerError) as e:
        return [f"{name}: {e}"]
    return []


def configs_problems(what: str, configs: Any, flavour: str,
                     owned: frozenset[str] = DRIVER_SETTINGS) -> list[str]:
    """Problems of named configurations ({name: {setting or intent: value, "flavour": …}}):
    their shape, settings the driver owns, intents a flavour cannot say, and names and
    values its server refuses (asked of the server)."""
    if not isinstance(configs, dict) or not configs or not all(
            isinstance(k, str) and k and isinstance(v, dict) for k, v in configs.items()):
        return [f'{what}: need named settings, e.g. {{"redo 1G": {{"redo_log": "1G"}}, '
                f'"redo 16M": {{"redo_log": "16M"}}}}, got {configs!r}']
    problems = []
    for name, config in configs.items():
        label = f"{what}[{name}]"
        intent, plain = split_config(config)
        clash = sorted(owned & {servers.norm_key(k) for k in plain})
        if clash:
            problems.append(f"{label}: {clash} are set by the driver, not here")
        server = config.get("flavour") or flavour
        bad = check_flavour(label, server)
        if bad:
            problems += bad
            continue
        try:
            said = servers.load_flavour(server).settings_for(intent)
        except servers.ServerError as e:
            problems.append(f"{label}: {e}")
            continue
        problems += settings_problems(label, {**said, **plain}, [server])
    return problems


