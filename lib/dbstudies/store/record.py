"""A run's record, typed: what metadata.json holds, read through one function (`Record.of`,
`Run.record`). Every key it reads is declared once here with its type and its default (as
pyperf declares its metadata): the run's identity and state, its host (`Host`), the servers
it started (`ServerRecord`), the arms it compared (`ArmRecord`), its plan. A run from before a
key was recorded reads that key's default; a key nobody declared is not read (the writer,
`Run.create`/`Run.update`, and the loop that records servers and arms, stay as they are).

    >>> r = Record.of({"study": "thread_pool", "status": "complete", "host": {"cpus": 2},
    ...                "arms": [{"label": "a"}, {"label": "a (A/A)", "twin_of": "a"}]})
    >>> r.host.cpus, r.labels, r.twins, r.servers
    (2, ['a', 'a (A/A)'], {'a (A/A)'}, ())
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Mapping


def _of(cls: type, given: Mapping[str, Any] | None) -> Any:
    """An instance of the record type `cls` from its recorded mapping: each declared field
    from its key (a missing or null key: the field's default), the mapping itself as `raw`."""
    given = given or {}
    values = {f.name: given[f.name] for f in dataclasses.fields(cls)
              if f.name != "raw" and given.get(f.name) is not None}
    return cls(**values, raw=given)


@dataclass(frozen=True)
class Host:
    """The machine a run measured on (`provenance.host_facts`, at its start; `loop_ms_end`
    at its end)."""
    hostname: str = ""
    cpu_model: str | None = None
    cpus: int = 0
    threads_per_core: int | None = None
    cpus_usable: int | None = None
    memory_gib: float | None = None
    kernel: str | None = None
    os: str | None = None
    filesystem: str | None = None
    virtual_machine: str | None = None
    machine_id: str | None = None
    loop_ms: float | None = None
    loop_ms_end: float | None = None
    storage: Mapping[str, Any] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)  # with the kernel's knobs

    @classmethod
    def of(cls, given: Mapping[str, Any] | None) -> "Host":
        return _of(cls, given)


@dataclass(frozen=True)
class ServerRecord:
    """A server a run started (`servers.Server.describe`): its label (its arm's, or the
    arms' that share it), flavour, version, binary, variables."""
    label: str = ""
    flavour: str = ""
    family: str = ""
    version: str = ""
    binary_sha256: str | None = None
    remote: str | None = None
    aio: str | None = None  # the asynchronous I/O it said it uses
    source: str | None = None  # "dir": a build directory's, with its layout, folder and runtime
    layout: str | None = None
    directory: str | None = None
    runtime: str | None = None
    global_variables: Mapping[str, Any] = field(default_factory=dict)
    session: Mapping[str, Any] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, given: Mapping[str, Any] | None) -> "ServerRecord":
        return _of(cls, given)


@dataclass(frozen=True)
class ArmRecord:
    """An arm as the run compared it (`studykit.Arm.record`): its label, server, settings and
    intent; `twin_of` the arm an A/A twin (or a paused twin) copies."""
    label: str = ""
    flavour: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    intent: Mapping[str, Any] = field(default_factory=dict)
    twin_of: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, given: Mapping[str, Any] | None) -> "ArmRecord":
        return _of(cls, given)


def of(meta: "Mapping[str, Any] | Record | None") -> "Record":
    """The record of a run's metadata (a `Record` as it is): what a function given either reads."""
    return meta if isinstance(meta, Record) else Record.of(meta)


def _when(text: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(text) if text else None


@dataclass(frozen=True)
class Record:
    """A run's metadata.json, typed. `raw`: the mapping itself (for what the loop reads back
    of its own writing: its progress, its server events)."""
    study: str = ""
    run_id: str = ""
    status: str = ""
    error: str | None = None
    study_dir: str | None = None
    design: str | None = None
    created_at: str | None = None
    finished_at: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    host: Host = field(default_factory=Host)
    servers: tuple[ServerRecord, ...] = ()
    arms: tuple[ArmRecord, ...] = ()
    arm_servers: Mapping[str, str] = field(default_factory=dict)
    plan: tuple[Mapping[str, Any], ...] = ()
    data: tuple[Mapping[str, Any], ...] = ()
    follow_up: tuple[Mapping[str, Any], ...] = ()  # the cells chosen after the plan (`Study.follow_up`)
    owner: Mapping[str, Any] = field(default_factory=dict)
    workload_scripts: tuple[Mapping[str, Any], ...] = ()
    rounds_done: int | None = None
    precision: Mapping[str, Any] = field(default_factory=dict)
    sysbench: Mapping[str, Any] = field(default_factory=dict)
    dbstudies: Mapping[str, Any] = field(default_factory=dict)
    tables: Mapping[str, Any] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, meta: Mapping[str, Any] | None) -> "Record":
        """The record of a run's metadata (the one reader: every view reads a run through it)."""
        r = _of(cls, meta)
        return dataclasses.replace(
            r, host=Host.of(r.raw.get("host")), servers=tuple(ServerRecord.of(s) for s in r.raw.get("servers") or ()),
            arms=tuple(ArmRecord.of(a) for a in r.raw.get("arms") or ()), plan=tuple(r.plan), data=tuple(r.data))

    @property
    def profile(self) -> str | None:
        """The profile its parameters started from."""
        return self.parameters.get("profile")

    @property
    def labels(self) -> list[str]:
        """The arms' labels in the run's order (the baseline first)."""
        return [a.label for a in self.arms]

    @property
    def twins(self) -> set[str]:
        """The labels of the twins (A/A, paused) among the arms."""
        return {a.label for a in self.arms if a.twin_of is not None}

    @property
    def flavours(self) -> dict[str, str]:
        """Each flavour the run started, with its binary's SHA-256 ('' where not recorded)."""
        return {s.flavour: s.binary_sha256 or "" for s in self.servers if s.flavour}

    @property
    def started(self) -> dt.datetime | None:
        return _when(self.created_at)

    @property
    def ended(self) -> dt.datetime | None:
        return _when(self.finished_at)
