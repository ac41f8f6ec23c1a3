"""A run's metadata in words, as the report shows it: the header that opens every report (the
study, run id, status, start and end in UTC, the dbstudies commit, the host, every server's
flavour and @@version, the sysbench version, then the parameters: value, profile value,
changed?), the banner of a run that did not complete (its status, error, how far it got, how to
run it again), the design in one line and the command that measures it again. The set-up
section's own parts (the servers' settings side by side, the data sizes, the client commands)
are `setup`'s.

Read from `metadata.json` (and the run's own files), written as HTML fragments; the page they
stand on is `render`'s.
"""
from __future__ import annotations

import html
import json
import os
import shlex
from pathlib import Path
from typing import Any, Mapping

from .. import stats
from ..kit.study import against_profile, unused_parameters
from ..store import params as P
from ..store import progress, record, settings
from ..store.record import ArmRecord, Host, Record, ServerRecord
from ..store.results import Run


def _e(value: Any) -> str:
    return html.escape(str(value))


def _host(h: Host) -> str:
    fs = (h.filesystem or "").split()
    vm = f"virtual machine ({h.virtual_machine}) · " if h.virtual_machine else ""
    return (f"{vm}{h.cpu_model} · {h.cpus} CPUs · {h.memory_gib} GiB · "
            f"Linux {h.kernel} · {h.os} · {fs[0] if fs else '?'}")


def _storage(s: Mapping[str, Any] | None) -> str:
    """'ext4 on vda (256 GiB, rotational as the kernel says) · rw,relatime,…'"""
    if not s:
        return "not recorded"
    kind = {True: "rotational", False: "non-rotational", None: "rotational unknown"}[s.get("rotational")]
    size = f"{s['size_gib']:g} GiB, " if s.get("size_gib") else ""
    model = f"{s['model']}, " if s.get("model") else ""
    return (f"{s.get('filesystem') or '?'} on {s.get('device') or '?'} ({model}{size}{kind} as "
            f"the kernel says) · {s.get('mount_options') or ''}")


def _servers(r: Record) -> str:
    """Each flavour with its @@version and its binary's SHA-256 (12 digits); a directory
    flavour also with where it came from (its layout and folder, and its runtime)."""
    seen = {}
    for s in r.servers:
        seen.setdefault(s.flavour, _server_fact(s))
    return ", ".join(f"{f} ({v})" for f, v in seen.items()) or "none started"


def _server_fact(s: ServerRecord) -> str:
    out = s.version
    if s.source == "dir":
        out += f", {s.layout} {Path(s.directory or '').name}" + (f" in {s.runtime}'s runtime" if s.runtime else "")
    if s.binary_sha256:
        out += f", sha256 {s.binary_sha256[:12]}"
    return out


def _parameters(meta: Mapping[str, Any]) -> str:
    """name | value | profile value | changed? — the profile's values from the study."""
    params = P.written(meta)
    unused = unused_parameters(params)
    rows = []
    for name, value, default in against_profile(meta) or [(k, v, v) for k, v in params.items()]:
        if name in unused:
            continue
        changed = "changed" if value != default else ""
        rows.append(f"<tr><td><code>{_e(name)}</code></td><td>{_e(_fmt(value))}</td>"
                    f"<td>{_e(_fmt(default))}</td><td>{changed}</td></tr>")
    return ("<table class='dbs-params'><thead><tr><th>parameter</th><th>value</th>"
            f"<th>profile {_e(params.get('profile'))}</th><th></th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
            + (f"<p>Not read by this run's workloads: {_e(', '.join(unused))}.</p>" if unused else ""))


def _fmt(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def header(run: Run, stopped: tuple[str, str] | None = None) -> tuple[str, str]:
    """What opens every report, in two parts: the top (a banner where the run did not
    complete or its analysis stopped — `stopped`: where —, then the set-up in one line) and
    the run's facts with its parameters, folded, for below the answer."""
    r = run.record
    meta = r.raw
    git = r.dbstudies
    commit = (f"commit {git['commit'][:12]}" if git.get("commit") else "commit unknown") \
        + (" (dirty)" if git.get("dirty") else "")
    facts = [("study", r.study), ("run", r.run_id), ("status", r.status),
             ("started (UTC)", r.created_at), ("ended (UTC)", r.finished_at or "—"),
             ("dbstudies", commit), ("host", _host(r.host)), ("storage", _storage(r.host.storage)),
             ("kernel settings", settings.knobs(r.host.raw)), ("servers", _servers(r)),
             ("sysbench", r.sysbench.get("version") or "not used")]
    if run.variant:  # a re-analysis at other analysis parameters, beside the run's own report
        changed = dict(run.variants()).get(run.variant, {})
        meta = {**meta, "parameters": {**P.written(meta),  # the values it was analysed at
                                       **{k: c.get("variant") for k, c in changed.items()}}}
        facts.insert(2, ("re-analysis", "variant " + run.variant + ": " + "; ".join(
            f"{k} {c.get('variant')!r} (the run's report: "
            f"{'its default' if c.get('run') is None else repr(c.get('run'))})" for k, c in changed.items())
            + " — nothing measured again"))
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts) + _sweep_row(run)
    top = (f"<section class='dbs-header'>{_banner(run, stopped)}"
           f"<p class='dbs-setupline'>{_e(setup_line(r))}</p></section>")
    folded = (f"<section class='dbs-header'><details><summary>The run's facts and parameters</summary>"
              f"<table class='dbs-facts'>{rows}</table>{_parameters(meta)}</details></section>")
    return top, folded


def setup_line(meta: Mapping[str, Any] | Record) -> str:
    """The set-up in one line: the host (machine, CPUs with threads per core, CPU model,
    kernel, its speed at the run's start and end: `provenance.speed_probe`), the servers
    (flavours that run one binary named so: an A/A of builds), sysbench, and the run.

    >>> setup_line({"host": {"virtual_machine": "kvm", "cpu_model": "AMD EPYC", "cpus": 2, "threads_per_core": 1,
    ...                      "kernel": "6.1.0-28-amd64", "loop_ms": 37.5, "loop_ms_end": 61.0},
    ...             "servers": [{"flavour": "mariadb-10.11", "version": "10.11.19-MariaDB-0+deb12u1"}],
    ...             "sysbench": {"version": "1.0.20"}, "run_id": "20261126T211644Z-f2875f", "status": "complete"})
    'virtual machine (kvm), 2 CPUs (1 thread per core), AMD EPYC, kernel 6.1.0-28-amd64, a fixed CPU loop in 37.5 ms at the start, 61 at the end · mariadb-10.11 10.11.19-MariaDB-0+deb12u1 · sysbench 1.0.20 · run 20261126T211644Z-f2875f, complete'
    """
    r = record.of(meta)
    h = r.host
    tpc = h.threads_per_core
    per_core = f" ({tpc} thread{'s' if tpc != 1 else ''} per core)" if tpc else ""
    machine = (f"virtual machine ({h.virtual_machine})" if h.virtual_machine else "bare metal") \
        + f", {h.cpus} CPUs{per_core}, {h.cpu_model}" + (f", kernel {h.kernel}" if h.kernel else "") + speed_words(h)
    seen, binary = {}, {}
    for s in r.servers:
        seen.setdefault(s.flavour, s.version)
        if s.binary_sha256:
            binary.setdefault(s.binary_sha256, {})[s.flavour] = True
    servers = ", ".join(f"{f} {v}" for f, v in seen.items()) or "no server started"
    twins = [(h, list(f)) for h, f in binary.items() if len(f) > 1]  # an A/A of builds: one binary, two names
    servers += "".join(f" ({' and '.join(f)}: the same binary, sha256 {h[:12]})" for h, f in twins)
    sysbench = r.sysbench.get("version")
    return " · ".join(x for x in (machine, servers, f"sysbench {sysbench}" if sysbench else "",
                                  f"run {r.run_id}, {r.status}") if x)


def speed_words(host: Host) -> str:
    """The host's speed as the set-up line says it (", a fixed CPU loop in 37.5 ms at the
    start, 61 at the end"; "" for a run recorded before the probe)."""
    start, end = host.loop_ms, host.loop_ms_end
    if start is None:
        return ""
    return f", a fixed CPU loop in {start:g} ms at the start" + (f", {end:g} at the end" if end is not None else "")


def _sweep_row(run: Run) -> str:
    """A facts row linking to the index of the sweep the run belongs to (sweep.json)."""
    try:
        marker = json.loads(run.file("sweep.json").read_text())
    except (OSError, ValueError):
        return ""
    index = marker.get("index")
    link = (f" — <a href='{_e(os.path.relpath(index, run.path))}'>the index of sweep "
            f"{_e(marker.get('indexed_by'))}: every run side by side</a>" if index else "")
    return f"<tr><th>sweep</th><td>{_e(marker.get('sweep'))}{link}</td></tr>"


def _banner(run: Run, stopped: tuple[str, str] | None) -> str:
    """A run that did not complete: how it ended, how far it got, what the report holds, how
    to run it again. A complete run whose analysis stopped: where and why."""
    r = run.record
    status = r.status
    if status == "complete" and not stopped:
        return ""
    lines = []
    if status != "complete":
        error = (r.error or "").strip().splitlines()
        far = progress.how_far(run)
        of = f" of {far['planned']} planned" if far["planned"] else ""
        lines.append(f"<b>Run {_e(status)}</b>{': ' + _e(error[0]) if error else ''}. "
                     f"It measured {far['done']}{of} step{'' if far['done'] == 1 and not of else 's'}.")
        if far["running"]:
            streamed = (f", {far['streamed_s']} s of it streamed and kept"
                        if far["streamed_s"] else "")
            lines.append(f"Under way when it ended: {_e(far['running'])}{streamed}.")
        server = run.servers_dir
        logs = ", ".join(sorted(str(p.relative_to(server)) for p in server.rglob("*.err")))
        if logs:
            lines.append(f"Server logs under server/: {_e(logs)}.")
        lines.append("The sections below analyse the steps that finished." if far["done"]
                     else "No step finished, so there is nothing to analyse.")
        lines.append(f"To measure it again: <code>{_e(rerun_command(r.raw))}</code>")
    said = status != "complete" and stopped and (
        stopped[1].startswith("NothingMeasured") or (r.error or "").startswith(stopped[1].split(":")[0]))
    if stopped and not said:  # an analysis that failed on its own, not the run's error again
        where = f"in “{_e(stopped[0])}”" if stopped[0] else "before its first section"
        lines.append(f"The analysis stopped {where} ({_e(stopped[1])}); what follows is left out.")
    return f"<div class='dbs-banner dbs-{_e(status)}'>{'<br>'.join(lines)}</div>"


def rerun_command(meta: Mapping[str, Any]) -> str:
    """The `dbstudies run` command line that measures a run's study again with the same
    parameters (those its profile sets are left out).

    >>> rerun_command({"study": "x", "parameters": {"profile": "smoke", "threads": [1, 8]}})
    "dbstudies run x --profile smoke -p threads '[1, 8]'"
    """
    params = P.written(meta)
    argv = ["dbstudies", "run", record.of(meta).study, "--profile", str(params.get("profile"))]
    for name, value, default in against_profile(meta) or [(k, v, None) for k, v in params.items()]:
        if name != "profile" and value != default:
            argv += ["-p", name, json.dumps(value)]
    return shlex.join(argv)


def design_line(meta: Mapping[str, Any] | Record, steps: Any = None) -> str:
    """How the run was measured, in one line (from its metadata: design, arms, plan), and,
    given its measured steps, what it measured as it ran (`as_ran`).

    >>> plan = [{"repeat": r, "pair": 2 * r + c} for r in range(1, 17) for c in (0, 1) for arm in "AB"]
    >>> design_line({"design": "paired", "arms": [{"label": "A"}, {"label": "B"}], "rounds_done": 16,
    ...              "parameters": {"restart_every": 1}, "plan": plan})
    'paired rounds: 16 rounds × 2 cells, the 2 arms of a cell back to back in a balanced order, each on a server of its own (2 running at once), all restarted and warmed up every round; verdicts from the per-round log ratios'
    >>> design_line({"design": "paired", "arms": [{"label": "A"}, {"label": "B"}], "rounds_done": 6,
    ...              "arm_servers": {"A": "f (shared)", "B": "f (shared)"}, "parameters": {"restart_every": 2}})
    "paired rounds: 6 rounds, the 2 arms of a cell back to back in a balanced order, on 1 server they share, each execution's session given its arm's settings, restarted and warmed up every 2 rounds; verdicts from the per-round log ratios"
    """
    r = record.of(meta)
    params = P.written(r.raw)
    ran = as_ran(steps)
    return _design(r, params) + _twins(r.arms, params) + (f"; as it ran: {ran}" if ran else "")


def as_ran(steps: Any) -> str:
    """What a run measured, counted from its measured steps (`results.measured`): steps,
    rounds (or repeats), and pairs per cell and arm — as it ran, whatever the plan said.

    >>> import pandas as pd
    >>> steps = pd.DataFrame({"repeat": [1, 1, 2, 2, 3, 3], "arm": ["A", "B"] * 3, "workload": ["w"] * 6,
    ...                       "threads": [1, 1, 1, 1, 8, 8], "pair": [1, 1, 2, 2, 3, 3]})
    >>> as_ran(steps)
    '6 measured steps in 3 rounds; 1–2 pairs per cell'
    """
    if steps is None or len(steps) == 0 or "repeat" not in steps:
        return ""
    cell = [c for c in ("workload", "threads", "rate") if c in steps]
    per = steps.groupby([*cell, "arm"]).size()
    paired = "pair" in steps and bool((steps["pair"] > 0).any())
    unit, count = ("rounds", "pairs per cell") if paired else ("repeats", "repeats per cell and arm")
    n = f"{per.min()}" if per.min() == per.max() else f"{per.min()}–{per.max()}"
    return f"{len(steps)} measured steps in {steps['repeat'].nunique()} {unit}; {n} {count}"


def _twins(arms: tuple[ArmRecord, ...], params: dict[str, Any]) -> str:
    """The control twins a run measured, said only where it measured them.

    >>> _twins((ArmRecord("A"), ArmRecord("A (A/A)", twin_of="A")), {"aa_control": True})
    '; with an A/A twin of A (the same configuration on a server of its own, measured like the others: its table should be all draw)'
    >>> _twins((ArmRecord("A"),), {"aa_control": False, "positive_control": None})
    ''
    """
    twins = [a for a in arms if a.twin_of]
    out = ""
    if params.get("aa_control") and twins:
        out += (f"; with an A/A twin of {twins[0].twin_of} (the same configuration on a server of its own, "
                "measured like the others: its table should be all draw)")
    pause = params.get("positive_control")
    if pause and twins:
        out += (f"; with a paused twin of {twins[0].twin_of} (its server stopped {pause.get('pause_ms')} ms "
                f"every {pause.get('every_s')} s: the positive control)")
    return out


def _design(r: Record, params: dict[str, Any]) -> str:
    arms = r.arms
    if r.design == "paired":
        rounds = r.rounds_done or params.get("repeats")
        first = {x["pair"] for x in r.plan if x.get("repeat") == 1}
        cells = f" × {len(first)} cells" if first else ""
        every = params.get("restart_every", 1)
        budget = f" ({params['budget']:g}-minute budget)" if params.get("budget") else ""
        aimed = r.precision
        if aimed.get("target"):  # measured to a precision target
            rounds = (f"{aimed.get('first_rounds')} rounds of every cell, then rounds only for the cells still "
                      f"above their target ({stats.target_words(aimed)}) — {aimed.get('rounds')}")
        n_servers = len(set(r.arm_servers.values())) or len(arms)
        where = (f"each on a server of its own ({n_servers} running at once)" if n_servers == len(arms)
                 else f"on {n_servers} server{'s' if n_servers > 1 else ''} they share, each "
                      "execution's session given its arm's settings")
        return (f"paired rounds: {rounds} rounds{cells}{budget}, the {len(arms)} arms of a cell back to "
                f"back in a balanced order, {where}, "
                f"{'all ' if n_servers > 1 else ''}restarted and warmed up every {'round' if every == 1 else f'{every} rounds'}; "
                "verdicts from the per-round log ratios")
    if not arms:
        return "not recorded"
    return (f"blocks: {params.get('repeats')} repeats, each arm ({len(arms)}) measured in a block of "
            "its own on a fresh server start, in an order shuffled per repeat; verdicts compare "
            "the repeats as independent samples")
