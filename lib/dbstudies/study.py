"""The Study contract, the studies found (never listed by hand), and the parameters every
study shares.

A study is a package — `dbstudies.studies.<name>`, or a folder of your own loaded by its
path (`load("./my_study")`, README "Writing a study") — whose `__init__` declares:

- `Params`: a frozen dataclass deriving from `StudyParams` (or `SysbenchParams`), with a
  `check()` for its own problems (shared checks are done here);
- `PROFILES`: every parameter's value in the smoke, quick and full profiles;
- `arms(p)`: the configurations compared, baseline first (each an `Arm`);
- `cells(p)`: what one block measures on every arm (sysbench studies inherit workload ×
  client threads from `SysbenchParams.cells`);
- optionally `prepare(ctx)`, `warmup(ctx)`, `step(ctx, cell)`, `pair(begin, cells)`,
  `block_seconds(p)` and `warmup_seconds(p)` (the defaults — `hooks`, and the sysbench
  parameters' own estimates — load and drive sysbench), and
  `follow_up(p, run)`: cells chosen from what the plan measured, measured after it;
  `profile_cells(p, run)` (with `CpuProfiled` parameters): the cells measured once more on
  every arm with the server profiled (`profiler`), after the plan and its follow-up;
- its analysis: tables, conclusion; optionally `paired_tables(run)`: the tables `dbstudies
  plan` predicts, as (words, observations, cell columns, value) — default: sysbench QPS and
  p99 per workload × threads.

In the paired design a study's own `step` measures each arm of a pair on that arm's server;
when its `Params.SHARED_SERVER` says that its steps give their arm's settings to each session
(`ctx.session`), the arms of one flavour share one server (`schedule.server_key`).

The measurement loop — server per flavour, blocks with restart and warm-up, per-step flush,
server records, progress, the A/A arm — is the library's (`experiment`), not the study's.
A study is a plain module: nothing forwards to it; the library's functions take it as their
first argument. This module sits below the loop (it imports neither pandas nor the loop);
`load` imports a study only when it is used.

    study = load("thread_pool")
    p = checks.resolve(study, "smoke", threads=[1, 8])
    run = ownership.open_run(study, p)
    experiment.measure(study, p, run)
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import shutil
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Protocol

from . import errors, paths, profiler, servers, workloads
from . import params as P

# settings the driver owns: no study parameter may override them
DRIVER_SETTINGS = frozenset({"datadir", "socket", "port", "bind_address", "pid_file",
                             "log_error", "user"})
AA_SUFFIX = " (A/A)"
DESIGNS = ("paired", "blocks")  # experiment: rounds of adjacent pairs, or blocks per fresh start
MAX_WAREHOUSES = 10_000
STEP_OVERHEAD = 0.6        # sysbench start-up and teardown around --time


@dataclass(frozen=True)
class Arm:
    """One configuration compared in a study: a label, what its server starts want — an
    `intent` (said in each flavour's dialect) and/or plain my.cnf `settings` —, and its
    flavour (None: the study's). `twin_of` marks the A/A copy of an arm."""
    label: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    flavour: str | None = None
    twin_of: str | None = None
    intent: servers.Intent | None = None


@dataclass(frozen=True, kw_only=True)
class StudyParams:
    """What every study has: server flavour, repeats, seed, the verdict's draw threshold,
    the A/A control, server pinning and extra my.cnf settings."""
    profile: str
    flavour: str
    repeats: int
    seed: int
    draw_threshold: float
    aa_control: bool = False
    server_cpus: str | None = None
    settings: dict = field(default_factory=dict)
    budget: float | None = None  # minutes: as many repeats (rounds) as fit, instead of `repeats`
    design: str = "blocks"       # "paired" (rounds of adjacent pairs) | "blocks" (experiment)
    restart_every: int = 1       # paired: restart (and warm up) every server every this many rounds
    align: str = "intent"        # "intent": like for like (servers.ALIGNED) | "defaults": as shipped
    RESERVED: ClassVar[frozenset[str]] = frozenset()  # settings the study itself owns
    # paired design: whether the study's steps give their arm's settings to each session, so
    # that arms of one flavour without an intent share a server (schedule.server_key)
    SHARED_SERVER: ClassVar[bool] = False

    def validate(self) -> list[str]:
        """Every problem of these parameters: the shared checks, then the study's `check`."""
        return self.shared_problems() + self.check()

    def shared_problems(self) -> list[str]:
        problems = check_flavour("flavour", self.flavour)
        problems += P.check_min(self, repeats=1, seed=0)
        if not 0 <= self.draw_threshold < 1:
            problems.append(f"draw_threshold: must be in [0, 1), got {self.draw_threshold}")
        if self.budget is not None and not self.budget > 0:
            problems.append(f"budget: minutes > 0 (or none: `repeats` decides), got {self.budget}")
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


@dataclass(frozen=True, kw_only=True)
class SysbenchParams(StudyParams):
    """A sysbench study: workloads × client threads, on tables it loads once per server.
    `tables` × `table_size` is the OLTP workloads' scale, `warehouses` the TPC-C-like one's,
    `nodes` the LinkBench-like one's (`workloads.OURS`)."""
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
    WORKLOADS: ClassVar[tuple[str, ...]] = ()
    SCRIPTS: ClassVar[bool] = True  # whether a workload may be a Lua script of the user's own
    MAX_THREADS: ClassVar[int] = 4096

    def shared_problems(self) -> list[str]:
        problems = super().shared_problems()
        if shutil.which("sysbench") is None:
            problems.append("sysbench is not installed (`make setup` installs it)")
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
        elif scripts and shutil.which("sysbench"):
            problems += [m for w in scripts for m in workloads.script_problems(w)]
        try:
            workloads.script_options(self.workload_options)
        except ValueError as e:
            problems.append(str(e))
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


def parse_cell(text: str) -> dict[str, Any] | None:
    """A cell named as `workload@threads` (None where the text is not of that form).

    >>> parse_cell("oltp_read_only@64"), parse_cell("oltp_read_only@x")
    ({'workload': 'oltp_read_only', 'threads': 64}, None)
    """
    workload, _, threads = str(text).rpartition("@")
    return {"workload": workload, "threads": int(threads)} if workload and threads.isdigit() else None


@dataclass(frozen=True, kw_only=True)
class CpuProfiled:
    """On-CPU profiles after the plan (`profile_cells`, `analysis.profiles`): with
    `cpu_profile`, each chosen cell is measured once more on every arm while `perf` samples
    its server; `cpu_profile_cells` names the cells (`workload@threads`) instead of the
    verdicts choosing them. Mixed in before a `SysbenchParams`."""
    cpu_profile: bool = False
    cpu_profile_cells: list[str] | None = None

    def shared_problems(self) -> list[str]:
        problems = super().shared_problems()  # type: ignore[misc]
        for text in self.cpu_profile_cells or []:
            cell = parse_cell(text)
            if cell is None or cell["workload"] not in self.workloads or cell["threads"] not in self.threads:
                problems.append(f"cpu_profile_cells: {text!r} is not a cell of this run (workload@threads "
                                f"with a workload of {self.workloads} and threads of {self.threads})")
        if self.cpu_profile_cells and not self.cpu_profile:
            problems.append("cpu_profile_cells: names cells to profile, but cpu_profile is false")
        if self.cpu_profile:
            problems += profiler.problems("cpu_profile")
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


def check_flavour(name: str, flavour: str) -> list[str]:
    """A known server flavour whose binaries are installed."""
    try:
        servers.check_installed(servers.load_flavour(flavour))
    except (errors.ConfigError, errors.ServerError) as e:
        return [f"{name}: {e}"]
    return []


INTENTS = tuple(f.name for f in dataclasses.fields(servers.Intent))


def split_config(config: Mapping[str, Any]) -> tuple[servers.Intent, dict[str, Any]]:
    """A named configuration's intent (keys naming `servers.Intent` fields) and its plain
    server variables (every other key; `flavour` excluded)."""
    intent = {k: v for k, v in config.items() if k in INTENTS}
    plain = {k: v for k, v in config.items() if k not in INTENTS and k != "flavour"}
    return servers.Intent(**intent), plain


def config_arms(configs: Mapping[str, Mapping[str, Any]], flavour: str) -> list[Arm]:
    """One arm per named configuration, in the order given (the first is the baseline); a
    configuration's `flavour` key picks its server (default: `flavour`)."""
    out = []
    for name, config in configs.items():
        intent, plain = split_config(config)
        out.append(Arm(name, plain, flavour=config.get("flavour") or flavour, intent=intent))
    return out


def config_servers(configs: Any, flavour: str) -> list[str]:
    """The flavours named configurations start (each its own `flavour`, else `flavour`);
    just `flavour` while the configurations are malformed (their check reports it)."""
    if isinstance(configs, dict) and all(isinstance(v, dict) for v in configs.values()):
        return list(dict.fromkeys(c.get("flavour") or flavour for c in configs.values()))
    return [flavour]


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


def remote_problems(arms: list[Arm], p: StudyParams) -> list[str]:
    """What these arms ask of a remote server that dbstudies cannot do: start it with
    settings or an intent (thread pool, redo log size, buffer pool …) — said before anything
    is measured."""
    problems = []
    for arm in arms:
        flavour = servers.load_flavour(arm.flavour or p.flavour)
        if not flavour.remote:
            continue
        asks = sorted({**dict(p.settings), **dict(arm.settings),
                       **(arm.intent.asdict() if arm.intent else {})})
        if asks:
            problems.append(f"{arm.label}: needs a server start with {', '.join(asks)}, but "
                            f"{flavour.name} is a remote server dbstudies does not restart or "
                            "reconfigure; measure it as it is (no settings, no intents)")
        if getattr(p, "cold", False):  # DBT3's cold executions restart the server
            problems.append(f"cold: cold executions restart {flavour.name}, a remote server "
                            "dbstudies does not restart")
    return list(dict.fromkeys(problems))


def with_control(arms: list[Arm], aa_control: bool) -> list[Arm]:
    """The arms to measure: the study's, plus (A/A control) a twin of the baseline."""
    if not aa_control:
        return list(arms)
    base = arms[0]
    twin = dataclasses.replace(base, label=base.label + AA_SUFFIX, twin_of=base.label)
    return [base, twin, *arms[1:]]


# ---------------------------------------------------------------- schedulers as arms

PER_CONNECTION, POOL = "one-thread-per-connection", "pool-of-threads"
SCHEDULERS = (PER_CONNECTION, POOL)


def scheduler_intent(scheduler: str, server_cpus: int) -> servers.Intent:
    """What a scheduler asks of the server; the pool gets one group per server CPU."""
    if scheduler == POOL:
        return servers.Intent(thread_pool=True, thread_pool_size=server_cpus)
    return servers.Intent(thread_pool=False)


def lacks_pool(flavour: str) -> str | None:
    """Why `flavour` cannot run the pool (its dialect says), or None when it can."""
    return servers.load_flavour(flavour).unavailable(scheduler_intent(POOL, 1))


def flavour_label(flavour: str) -> str:
    """How an arm names a flavour: by its name; a flavour file given by its path (a server
    of the user's own kept outside env/servers) by the file's name without .toml.

    >>> flavour_label("mariadb-10.11"), flavour_label("/home/me/servers/patched.toml")
    ('mariadb-10.11', 'patched')
    """
    return Path(flavour).stem if str(flavour).endswith(".toml") else flavour


def _scheduler_label(p: "MultiServerParams", flavour: str, scheduler: str) -> str:
    return scheduler if len(p.flavours) == 1 else f"{flavour_label(flavour)} · {scheduler}"


def scheduler_arms(p: "MultiServerParams", schedulers: list[str]) -> list[Arm]:
    """One arm per server × scheduler it has; the baseline (the baseline server's
    one-thread-per-connection) first. One server: the arms are named by scheduler alone."""
    order = sorted(schedulers, key=SCHEDULERS.index)
    return [Arm(_scheduler_label(p, f, s), intent=scheduler_intent(s, p.server_cpu_count), flavour=f)
            for f in p.servers() for s in order if s != POOL or not lacks_pool(f)]


def schedulers_unavailable(p: "MultiServerParams", schedulers: list[str]) -> list[tuple[str, str]]:
    """(arm label, flavour) of each server × scheduler that cannot be measured: the pool on
    a flavour without one (MySQL community)."""
    return [(_scheduler_label(p, f, POOL), f) for f in p.servers()
            if POOL in schedulers and lacks_pool(f)]


def schedulers_problems(p: "MultiServerParams", schedulers: list[str]) -> list[str]:
    """Unknown schedulers, bad flavours, and a pool asked of servers none of which has one."""
    problems = P.check_choices("schedulers", schedulers, SCHEDULERS)
    bad = p.flavour_problems()
    if not bad and POOL in schedulers and all(lacks_pool(f) for f in p.flavours):
        bad.append(f"schedulers: none of {', '.join(p.flavours)} has a thread pool")
    return problems + bad


class StudyModule(Protocol):
    """What a study module declares (the contract the loop, the planner and the runner read).

    Optional hooks, looked up with `hook(study, name)`: `cells(p)` (default: the parameters'
    own), `prepare(ctx)`, `warmup(ctx)`, `step(ctx, cell)`, `block_seconds(p)`,
    `warmup_seconds(p)`, `follow_up(p, run)`, `paired_tables(run)` and `table_cells(p)` (the
    cells of the tables `paired_tables` gives, where they are not the plan's: the latency
    study's offered levels come after its calibration) and `sweep_steps(run)` (the steps a
    sweep shows side by side; default: every measured step)."""
    __name__: str
    __doc__: str | None
    Params: type[StudyParams]
    PROFILES: Mapping[str, Mapping[str, Any]]

    def arms(self, p: Any) -> list[Arm]: ...


def study_name(study: StudyModule) -> str:
    """The study's registry name (its module's last component)."""
    return study.__name__.rsplit(".", 1)[-1]


def title(study: StudyModule) -> str:
    """The first line of the study module's docstring."""
    return (study.__doc__ or study_name(study)).strip().splitlines()[0]


def hook(study: StudyModule, what: str, default: Any = None) -> Any:
    """The study's optional hook `what`, else `default`."""
    return getattr(study, what, None) or default


def arms_of(study: StudyModule, p: StudyParams) -> list[Arm]:
    """The arms measured: the study's, A/A twin included when `p.aa_control`."""
    return with_control(study.arms(p), p.aa_control)


def cells_of(study: StudyModule, p: StudyParams) -> list[dict[str, Any]]:
    """The study's `cells(p)`, else the parameters' own (sysbench: workload × threads)."""
    own = hook(study, "cells")
    return own(p) if own else p.cells()


def against_profile(meta: Mapping[str, Any]) -> list[tuple[str, Any, Any]] | None:
    """A run's parameters beside its profile's values: [(name, value, profile value)];
    None when the run's study or profile is unknown here."""
    params = meta.get("parameters", {})
    try:
        profile = load(reference(meta)).PROFILES[params["profile"]]
    except (P.ParamError, KeyError):
        return None
    return [(k, v, v if k == "profile" else profile.get(k, v)) for k, v in params.items()]


def unused_parameters(params: Mapping[str, Any]) -> list[str]:
    """Parameters a run's workloads never read: the TPC-C scale without `tpcc`, LinkBench's
    without `linkbench`, sysbench's OLTP tables without an OLTP workload.

    >>> unused_parameters({"workloads": ["oltp_point_select"], "warehouses": 1, "nodes": 10, "tables": 1})
    ['warehouses', 'nodes']
    """
    ran = set(params.get("workloads") or [])
    if not ran:
        return []
    used_by = {"warehouses": "tpcc", "nodes": "linkbench", "tables": "oltp", "table_size": "oltp"}
    families = {workloads.family(w) for w in ran}
    return [name for name, family in used_by.items() if name in params and family not in families]


def names() -> list[str]:
    """The built-in studies: every package in studies/ (found, never registered by hand)."""
    return sorted(p.parent.name for p in paths.STUDIES_DIR.glob("*/__init__.py"))


def is_folder(study: str | os.PathLike) -> bool:
    """Whether `study` names a study by its folder (a path) rather than a built-in's name."""
    return os.sep in str(study) or str(study).startswith(".") or Path(study).is_dir() and str(study) not in names()


def load(study: str | os.PathLike) -> StudyModule:
    """The study called `study` — a built-in's name, or the folder of a study of your own
    (its `__init__.py`, beside its notebook) —, imported now: nothing below imports a
    study module, and nothing lists them by hand."""
    if is_folder(study):
        return _load_folder(Path(study))
    if study not in names():
        raise P.ParamError([f"study: unknown study {study!r}; known: {', '.join(names())} (or a "
                            "study's folder, e.g. ./my_study)"])
    return importlib.import_module(f"dbstudies.studies.{study}")


OUTSIDE = "dbstudies_outside"  # the package name a study of your own is imported under


def _load_folder(folder: Path) -> StudyModule:
    folder = folder.expanduser().resolve()
    init = folder / "__init__.py"
    if not init.is_file():
        raise P.ParamError([f"study: {folder} is not a study's folder (no __init__.py; README "
                            "\"Writing a study\")"])
    name = f"{OUTSIDE}.{folder.name}"
    if name in sys.modules and Path(sys.modules[name].__file__).resolve() == init:
        return sys.modules[name]
    if not folder.name.isidentifier():
        raise P.ParamError([f"study: the folder's name {folder.name!r} must be a Python name "
                            "(letters, digits, _), it names the study"])
    if OUTSIDE not in sys.modules:  # a namespace for studies of your own
        sys.modules[OUTSIDE] = types.ModuleType(OUTSIDE)
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    problems = [f"study: {folder} declares no {what}" for what in ("Params", "PROFILES", "arms")
                if not hasattr(module, what)]
    if problems:
        raise P.ParamError(problems)
    return module


def reference(meta: Mapping[str, Any]) -> str:
    """What `load` takes to load a run's study again: the folder of a study of your own
    (recorded in the run's metadata), else the built-in's name."""
    return meta.get("study_dir") or meta["study"]


def notebook_of(study: StudyModule) -> Path:
    """The study's notebook: notebooks/<name>.ipynb, or <name>.ipynb in its own folder."""
    folder = paths.study_folder(study)
    return (folder or paths.NOTEBOOKS_DIR) / f"{study_name(study)}.ipynb"
