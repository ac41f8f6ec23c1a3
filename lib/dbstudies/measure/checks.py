"""A study's parameters, checked whole before anything starts: the profile's values with the
overrides (`resolve`, or a notebook's parameters cell: `resolve_cell`), then what no single
parameter shows — a remote server asked for a restart, a time budget shorter than two rounds,
servers that would not fit this machine's memory. Every problem is a line of one `ParamError`.
"""
from __future__ import annotations

import json
from typing import Any, Mapping

from .. import servers
from ..core import comparisons, paths
from ..core.errors import ReplicationError
from ..kernel import live, passes
from ..kit.contract import Study, study_name
from ..kit.studykit import Arm, StudyParams, arms_of
from ..store import archive
from ..store import params as P
from ..store.results import Run, find_run
from .schedule import design, round_seconds, server_key, servers_needed

# memory of one private server beyond its buffer pool (log buffer, dictionary, caches, the
# connection threads' stacks and buffers), and per client connection (measured ≈ 0.3 MiB)
SERVER_OVERHEAD, PER_CONNECTION = 512 * 2**20, 2**20
MEMORY_SHARE = 0.8         # the servers may plan on this share of the available memory


def resolve(study: Study, profile: str = "quick", **overrides: Any) -> StudyParams:
    """The study's validated parameters: the profile's values, with non-None overrides
    applied (each problem a line of one `ParamError`, before anything starts); on a remote
    target no arm may need a restart or a config change; a time budget must hold two rounds
    (with a precision `target`: its first `repeats` rounds);
    the servers kept up at once must fit this machine's memory. With `replicate`, the
    profile and parameters are the named run's (`replication_base`)."""
    replicate = bool(overrides.get("replicate"))
    if replicate:
        profile, overrides = replication_base(study, overrides)
    p = P.from_profile(study.Params, study.PROFILES, profile, overrides)
    if replicate:
        p = P.keep_nones(p, overrides)  # a None the original recorded stays None
    arms = arms_of(study, p)
    problems = remote_problems(arms, p) + target_problems(p)
    first = p.repeats if p.target else 2
    if p.budget and p.budget * 60 < first * round_seconds(study, p):
        what = (f"the {first} rounds every cell gets first with a `target` (`repeats`)" if p.target else
                f"the two {'rounds' if design(p) == 'paired' else 'repeats'} a verdict needs")
        problems.append(f"budget: {p.budget:g} min cannot hold {what} "
                        f"(≈ {round_seconds(study, p) / 60:.1f} min each)")
    if not problems:
        problems += memory_problems(arms, p)
    if problems:
        raise P.ParamError(problems)
    return p


def replication_base(study: Study, given: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The profile and parameters a replication of the run `given["replicate"]` (a run
    directory or a packed run) measures with: every parameter as that run recorded it, its
    own copies of the user's workload scripts (each checked against the SHA-256 it recorded),
    the analysis parameters (`ANALYSIS`) as `given` where given. One line
    (`ReplicationError`), before anything is written, when the run is of another study, when
    this machine lacks one of its server flavours, or a workload script's copy is missing or
    differs — or when `given` changes a measurement parameter (a replication measures what
    the original did)."""
    original = archive.open_run(given["replicate"])
    r, name = original.record, original.path.name
    if r.study != study_name(study):
        raise ReplicationError(f"replicate: run {name} is a {r.study} run, not {study_name(study)}")
    recorded = P.written(original.metadata)
    profile = recorded.pop("profile", "quick")
    here = set(servers.list_flavours())
    for flavour in sorted(set(r.flavours) - here):
        raise ReplicationError(f"replicate: run {name} measured the server flavour {flavour}, which this machine "
                               f"does not have (no env/servers/{flavour}.toml; `dbstudies servers add` makes one)")
    copies = {}
    for kept in r.workload_scripts:
        copy = original.path / kept["copy"]
        if not copy.is_file() or paths.sha256(copy) != kept["sha256"]:
            state = "is missing" if not copy.is_file() else "is not the script it ran (SHA-256 differs)"
            raise ReplicationError(f"replicate: run {name}'s copy of its workload script {kept['workload']} "
                                   f"{state} ({kept['copy']})")
        copies[kept["workload"]] = str(copy)
    if "workloads" in recorded:
        recorded["workloads"] = [copies.get(w, w) for w in recorded["workloads"]]
    known, analysis = P.fields(study.Params), study.Params.ANALYSIS
    differs = [f"{k} = {v!r} (the run's: {recorded.get(k)!r})" for k, v in given.items()
               if v is not None and k in recorded and k not in analysis and k not in ("replicate", "profile")
               and _text(v) != _text(recorded[k])]
    if differs:
        raise ReplicationError("replicate: a replication measures with the original's parameters; drop "
                               + "; ".join(differs))
    return profile, {**{k: v for k, v in recorded.items() if k in known},
                     **{k: v for k, v in given.items() if k in analysis and v is not None},
                     "replicate": str(archive.locate(given["replicate"]))}


def resolve_cell(study: Study, namespace: Mapping[str, Any]) -> StudyParams:
    """`resolve` with a notebook's parameters cell: `profile` and every parameter of the
    study found in `namespace` (the notebook's `globals()`: its cell, and whatever papermill
    injected), None meaning the profile's value. The cell is the only list of parameters a
    notebook writes; nothing names them a second time. With `run_dir` naming a run that has
    ended, the notebook re-analyses it (`reanalysis`). In a live kernel a problem we
    diagnosed shows as one line (`live.one_line_errors`).

    >>> from dbstudies.kit.study import load
    >>> resolve_cell(load("thread_pool"), {"profile": "smoke", "threads": [1, 8], "x": 1}).threads
    [1, 8]
    """
    run_dir, run = namespace.get("run_dir"), None
    kernel = live.shell()
    mine = kernel is not None and namespace is kernel.user_ns  # a pass of a live notebook
    if mine:  # (Run All stops at its failing cells since `import dbstudies`: `passes.in_kernel`)
        passes.forget(namespace, keep=[*P.fields(study.Params), *(k for k, v in namespace.items() if v is study)])
    try:
        run = Run.open(find_run(run_dir)) if run_dir else None
    finally:  # (the CLI's measuring notebook keeps whole tracebacks: notebook-failed.ipynb)
        if run is None or run.status != "running":
            live.one_line_errors()
    given = {name: namespace[name] for name in P.fields(study.Params) if name in namespace}
    if run is not None and run.status != "running":
        return reanalysis(study, run, namespace.get("profile"), given)
    p = resolve(study, namespace.get("profile") or "quick", **given)
    last = passes.last_run() if mine and run is None else None
    if last is not None and last.study == study_name(study) and not measured_differently(p, last.params(study)):
        namespace["run_dir"] = str(last.path)  # what the later cells open
        print(f"The measurement parameters are those of this kernel's last run, {last.path.name}: re-analysing "
              "it (nothing is measured). To measure again, change one, or Kernel › Restart Kernel and Run All Cells.")
        return reanalysis(study, last, namespace.get("profile"), given)
    return p


def measured_differently(p: StudyParams, recorded: StudyParams) -> list[str]:
    """The measurement parameters (all but `ANALYSIS`, the profile too) whose values differ
    between `p` and a run's `recorded` ones.

    >>> from dbstudies.kit.study import load
    >>> s = load("thread_pool")
    >>> a, b = resolve(s, "smoke"), resolve(s, "smoke", draw_threshold=0.2, threads=[1, 2])
    >>> measured_differently(a, b), measured_differently(a, resolve(s, "smoke", draw_threshold=0.2))
    (['threads'], [])
    """
    mine, theirs = P.as_dict(p), P.as_dict(recorded)
    return sorted(k for k in mine if k not in p.ANALYSIS and _text(mine[k]) != _text(theirs.get(k)))


def reanalysis(study: Study, run: Run, profile: str | None, given: Mapping[str, Any],
               say: Any = print) -> StudyParams:
    """The parameters of a re-analysis of the ended `run`: what it measured with — every
    parameter as the run recorded it — but the study's analysis parameters (`ANALYSIS`: the
    draw threshold, …) as `given` (None: the run's). A measurement parameter `given` that
    differs from the run's is named (`say`) and ignored: nothing is measured again. The run's
    parameters are read back typed (`Run.params`: one it predates as its profile had it, a
    mode in `PREDATED` at its default)."""
    recorded = run.params(study)
    ran, analysis = recorded.profile, study.Params.ANALYSIS
    as_run = {k: v for k, v in P.as_dict(recorded).items() if k != "profile"}
    p = P.from_profile(study.Params, study.PROFILES, ran,
                       {**as_run, **{k: v for k, v in given.items() if k in analysis and v is not None}})
    p = P.keep_nones(p, as_run)  # a None the run recorded stays None
    differs = [f"{k} = {v!r} (the run's: {as_run.get(k)!r})" for k, v in given.items()
               if v is not None and k not in analysis and k != "profile" and _text(v) != _text(as_run.get(k))]
    if profile and profile != ran:
        differs.insert(0, f"profile = {profile!r} (the run's: {ran!r})")
    changed = p.analysis_changes(recorded)
    if changed:
        say(f"Re-analysing run {run.path.name} at {', '.join(f'{k} = {v!r}' for k, v in changed.items())} "
            f"(the run's: {', '.join(repr(getattr(recorded, k)) for k in changed)}): "
            "a variant of its own, "
            "beside what the run wrote.")
    if differs:
        say("The cell's " + "; ".join(differs) + " — ignored: a re-analysis keeps the run's "
            f"measurement parameters (of the cell only {', '.join(sorted(analysis))} apply).")
    return p


def _text(value: Any) -> str:
    """A parameter's value as comparable text (a tuple and a list alike)."""
    return json.dumps(value, default=str, sort_keys=True)


def memory_needed(arms: list[Arm], p: StudyParams) -> list[tuple[str, int]]:
    """(server key, bytes) each server may hold: its buffer pool (the largest any arm it
    runs asks for), `SERVER_OVERHEAD`, and `PER_CONNECTION` per client thread. Remote
    servers need none of this machine's memory."""
    out = []
    for key, arm in servers_needed(arms, p):
        flavour = servers.load_flavour(arm.flavour or p.flavour)
        if flavour.remote:
            continue
        mine = [a for a in arms if server_key(a, p) == key]
        pool = max(_size(servers.configured(flavour, {**p.settings, **a.settings},
                                            servers.base_intent(p.align).merge(a.intent))
                         .get("innodb_buffer_pool_size")) for a in mine)
        out.append((key, pool + SERVER_OVERHEAD + PER_CONNECTION * max_clients(p)))
    return out


def _size(value: Any) -> int:
    return servers.size_bytes(value) or 128 * 2**20  # the servers' own default pool


def memory_problems(arms: list[Arm], p: StudyParams, available: int | None = None) -> list[str]:
    """A parameter problem when the servers a run keeps up at once would not fit in
    `MEMORY_SHARE` of this machine's available memory (psutil): never a swapping machine."""
    import psutil
    needed = memory_needed(arms, p)
    total = sum(b for _, b in needed)
    available = psutil.virtual_memory().available if available is None else available
    if total <= MEMORY_SHARE * available:
        return []
    each = ", ".join(f"{k} {b / 2**30:.1f}" for k, b in needed)
    hint = ("lower innodb_buffer_pool_size (`settings`), leave aa_control off, or measure in "
            "blocks (`design blocks`: one server per flavour)" if design(p) == "paired"
            else "lower innodb_buffer_pool_size (`settings`) or compare fewer flavours")
    return [f"memory: the {len(needed)} servers this {design(p)} design keeps up at once would "
            f"hold {total / 2**30:.1f} GiB ({each} GiB: buffer pool + "
            f"{SERVER_OVERHEAD / 2**20:.0f} MiB + {PER_CONNECTION / 2**20:.0f} MiB per client "
            f"thread), more than {MEMORY_SHARE:.0%} of the {available / 2**30:.1f} GiB available: {hint}"]




def max_clients(p: Any) -> int:
    """The most client connections one step opens (sysbench's largest thread count)."""
    return max(getattr(p, "threads", None) or [0])


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
        if arm.pause is not None:
            problems.append(f"positive_control: pausing {flavour.name}, a remote server, is not "
                            "ours to do (its process is not on this machine)")
        if getattr(p, "cold", False):  # DBT3's cold executions restart the server
            problems.append(f"cold: cold executions restart {flavour.name}, a remote server "
                            "dbstudies does not restart")
    return list(dict.fromkeys(problems))


def target_problems(p: StudyParams) -> list[str]:
    """A precision target names this study's tables, by fractions, in the paired design,
    with a budget and at least three first rounds."""
    if not p.target:
        return []
    allowed = comparisons.targets(p.COMPARISONS)
    if not allowed:
        return ["target: this study's comparison tables take no precision target"]
    problems = [f"target: {k!r} is not one of this study's tables ({', '.join(allowed)})"
                for k in p.target if k not in allowed]
    problems += [f"target: {k} must be a fraction in (0, 1) — 0.05 for 5 % — got {v!r}"
                 for k, v in p.target.items() if not (isinstance(v, (int, float)) and 0 < v < 1)]
    if p.design != "paired":
        problems.append("target: measuring to a target needs `design` paired (cells are given rounds one "
                        "pair at a time); `-p target '{}' -p budget 0` measures `repeats` fixed rounds")
    if not p.budget:
        problems.append("target: needs a `budget` (minutes): the time the run may spend reaching it")
    if p.repeats < 3:
        problems.append(f"target: `repeats` is the rounds every cell gets first, at least 3 (a "
                        f"variance to judge its precision by); got {p.repeats}")
    return problems
