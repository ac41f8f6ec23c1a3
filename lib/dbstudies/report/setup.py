"""How a report says what was run: the plan before it, where the run is, the study's narrative, the
set-up section — the design, the servers' settings side by side (`configuration`), the data
against each buffer pool (`data_sizes`), the client command (`client_commands`) — and how its
tables were judged."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping

from ..kit.contract import Answer
from ..kit.study import load, params_of, reference
from ..measure import schedule
from ..store import params as P
from ..store import progress, record, results, settings
from ..store.record import Record
from ..store.results import Run
from .described import _e, design_line
from .render import scrub_paths


def plan(study: Any, p: Any, run_dir: Any = None) -> None:
    """What the notebook is about to do, in one line: measure (`schedule.describe`: the
    steps, rounds, arms and about how long) — or, given an ended run, re-analyse it, measuring
    nothing."""
    if run_dir:
        run = Run.open(results.find_run(run_dir))
        if run.status != "running":
            done = progress.how_far(run)["done"]
            print(f"Re-analysing run {run.path.name} ({run.status}, {done} measured steps): nothing is measured.")
            return
    print(schedule.describe(study, p))


def where(run: Run) -> str:
    """Where the notebook writes: the run directory, or a re-analysis variant's folder in it."""
    if run.variant:
        return (f"re-analysis variant {run.variant}: its report and figures go to {run.output_dir}; "
                f"what run {run.path.name} wrote stays as it is")
    return f"run directory: {run.path}"


def narrative(study: Any, part: str) -> None:
    """A face's own words (its module's `NARRATIVE[part]`) in the notebook the faces of its
    experiment share."""
    from IPython.display import Markdown, display
    display(Markdown(study.NARRATIVE[part]))


def _judging(run: Run, said: Answer | None) -> list[str]:
    """The set-up's paragraphs on how the verdicts judge: the seconds judged, what each
    verdict table can detect, and what a difference is."""
    if said is None:
        return []
    from ..analysis import caveats
    from ..stats import reachability
    parts = []
    if "qps" in said.tables:
        judged, _ = caveats.judged_seconds_of(run, said.tables, "qps", params_of(run))
        if judged:
            parts.append(f"<p><b>Seconds judged.</b> {_e(judged)}.</p>")
    reach = [(name, reachability(rel)) for name, rel in said.verdict_tables().items()
             if rel is not None and not rel.empty and "mde_pct" in rel]
    if reach:
        parts.append("<p><b>What the comparisons can detect.</b></p><ul>" + "".join(
            f"<li>{_e(name)}: {_e('. '.join(lines))}.</li>" for name, lines in reach) + "</ul>")
        parts.append(
            "<p><b>What a difference is.</b> Each difference is a ratio of geometric means — in a "
            "paired run, the mean of each round's log ratio of two steps measured back to back — "
            "and its interval is Holm-adjusted: widened to the level Holm's step-down tests that "
            "cell at, so it excludes no change exactly when the verdict could call it better or "
            "worse. It need not equal the difference of two medians in the summaries: a median is "
            "of one arm's steps alone, so drift between rounds moves it, while a paired ratio "
            "cancels the drift both steps of a round shared.</p>")
    return parts


def setup(run: Run, said: Answer | None = None) -> None:
    """How the run was measured, for judging its answer: the design in one line, what each
    of the answer's (`said`) verdict tables could detect (said once here), the servers' settings that matter and
    what differs between arms, the data against each buffer pool, the client command.
    It comes before the figures: the arms get their colours here, baseline first, so a
    configuration has the same colour in every figure whatever order a figure meets it in."""
    from IPython.display import HTML, display

    from .. import plots  # here, not at the top: a command that renders a report draws no figure
    r = run.record
    plots.palette(r.labels)
    steps = results.measured(run) if run.has_table("steps") else None
    parts = [f"<p><b>Design.</b> {_e(design_line(r, steps))}.</p>", *_judging(run, said)]
    governing = tuple(load(reference(r)).GOVERNING) if r.study else ()
    for title, body in (("Servers: the settings that matter and what differs between arms",
                         configuration(r, governing)),
                        ("Data against the buffer pool", data_sizes(r)),
                        ("Client command", client_commands(r))):
        if body:
            parts.append(f"<p><b>{_e(title)}.</b></p>{body}")
    cnfs = sorted(run.servers_dir.glob("*/my.cnf")) if run.servers_dir.is_dir() else []
    if cnfs:
        parts.append("<p><b>Each server's my.cnf</b>, as it started (in the run directory): " + " · ".join(
            f"<a href='{_e(Path(os.path.relpath(c, run.output_dir)).as_posix())}'>{_e(c.parent.name)}</a>"
            for c in cnfs) + "</p>")  # from the report: the run's, or a variant's two folders down
    display(HTML(f"<div class='dbs-setup'>{scrub_paths(''.join(parts), run)}</div>"))


MAX_DIFFERENCES = 20


def breakable(value: str) -> str:
    """A value escaped for HTML, with a line-break opportunity after each comma of a long list
    (`optimizer_switch` has ≈ 40 flags in one word: unbroken, its table was 12,000 px wide).

    >>> breakable("a=on,b=off"), breakable("x<y")
    ('a=on,<wbr>b=off', 'x&lt;y')
    """
    return _e(value).replace(",", ",<wbr>")


def configuration(meta: Mapping[str, Any] | Record, governing: tuple[str, ...] = ()) -> str:
    """An HTML table: per arm, the key variables, the variables that govern what the study
    varies (`governing`: a study's `GOVERNING`, e.g. the pool's and the per-connection
    scheduler's), and every variable whose value differs between the arms (machine-specific
    ones left out), sizes in MiB/GiB, the variables a like-for-like run aligned marked;
    "" when no arm's server was recorded."""
    per_arm = settings.arm_variables(meta)
    if not per_arm:
        return ""
    arms = list(per_arm)
    differ = [n for n, _ in settings.differences(meta) if n not in settings.KEY_VARIABLES]
    aligned = set(settings.aligned(meta))
    first = list(dict.fromkeys([*settings.KEY_VARIABLES, *governing]))
    names = [n for n in first if any(n in v for v in per_arm.values())]
    names += [n for n in differ[:MAX_DIFFERENCES] if n not in names]
    head = "".join(f"<th>{_e(a)}</th>" for a in arms)
    rows = []
    for n in names:
        values = [per_arm[a].get(n) for a in arms]
        shown = [settings.shown(n, v) for v in values]
        mark = " class='dbs-differs'" if not settings.same(values) else ""
        tags = " <small>aligned</small>" if n in aligned else ""
        tags += " <small>governs what the study varies</small>" if n in governing else ""
        rows.append(f"<tr{mark}><td><code>{_e(n)}</code>{tags}</td>"
                    + "".join(f"<td>{breakable(v)}</td>" for v in shown) + "</tr>")
    more = len(differ) - MAX_DIFFERENCES
    note = (f"<p>…and {more} more variables that differ (every server's variables: "
            "metadata.json, <code>servers</code>).</p>" if more > 0 else "")
    same = " (one arm)" if len(arms) == 1 else "; a highlighted row differs between arms"
    how = ("<p>Like for like (<code>align = \"intent\"</code>): the variables marked <i>aligned</i> "
           "were said the same to every server, each in its own dialect.</p>" if aligned else
           "<p>Each server as it ships (<code>align = \"defaults\"</code>, a remote server, or a run "
           "recorded before alignment): nothing was aligned beyond the study's own settings.</p>")
    return (f"<p>Global variables of each arm's server as it ran{same}; on a shared server, "
            f"with the settings of the arm's sessions.</p>{how}"
            f"<table class='dbs-config'><thead><tr><th>variable</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>{note}")


def data_sizes(meta: Mapping[str, Any] | Record) -> str:
    """One line per server the study loaded: its data (as information_schema reports it
    after the load) against that server's buffer pool; "" when none was recorded."""
    r = record.of(meta)
    data = r.data
    if not data:
        return ""
    pools = {}
    for s in r.servers:
        key = s.label.removeprefix("prepare ")
        pool = s.global_variables.get("innodb_buffer_pool_size")
        if pool:
            pools.setdefault(key, int(pool))
    lines = []
    for server in dict.fromkeys(d["server"] for d in data):
        mine = [d for d in data if d["server"] == server]
        total = sum(d["bytes"] for d in mine)
        schemas = ", ".join(f"{d['schema']} {settings.bytes_text(d['bytes'])}, ≈ {d['rows']:,} rows" for d in mine)
        pool = pools.get(server)
        vs = (f" — {settings.share_of(total, pool, 'its buffer pool')} ({settings.size_text(pool)})"
              if pool else "")
        lines.append(f"<li>{_e(server)}: {_e(settings.bytes_text(total))} ({_e(schemas)}){_e(vs)}</li>")
    return ("<p>Data and indexes the study loaded, as information_schema reports them after "
            f"the load and an ANALYZE TABLE (InnoDB's figures are estimates):</p><ul>{''.join(lines)}</ul>")


def client_commands(meta: Mapping[str, Any] | Record) -> str:
    """The sysbench command line of the measured steps, one per workload (and per closed or
    open loop: an offered rate is said by DBSTUDIES_RATE), with the values that change from
    step to step (client threads, seed, rate) written as {…}; "" without sysbench."""
    r = record.of(meta)
    calls = [c for c in r.sysbench.get("calls") or [] if c.get("command") == "run"]
    duration = P.written(r.raw).get("duration")
    calls = [c for c in calls if f"--time={duration}" in c.get("argv", [])] or calls
    lines = []
    kinds = dict.fromkeys((c.get("workload"), "DBSTUDIES_RATE" in (c.get("env") or {})) for c in calls)
    for workload, open_loop in kinds:
        mine = [c for c in calls if c.get("workload") == workload
                and ("DBSTUDIES_RATE" in (c.get("env") or {})) == open_loop]
        argv = [_varying(re.sub(r"^.*/(lib/dbstudies/)", r"\1", a),  # wherever the repository was
                         [next((b for b in c["argv"] if b.split("=", 1)[0] == a.split("=", 1)[0]), a)
                          for c in mine])
                for a in mine[0]["argv"]]
        env = [_varying(f"{k}={v}", [f"{k}={(c.get('env') or {}).get(k, '')}" for c in mine])
               for k, v in (mine[0].get("env") or {}).items()
               if k in ("DBSTUDIES_WORKLOAD", "DBSTUDIES_RATE", "DBSTUDIES_ARRIVALS")]
        lines.append(f"<pre>{_e(' '.join(env) + ' ' if env else '')}{_e(' '.join(argv))}</pre>")
    if not lines:
        return ""
    return ("<p>sysbench 1.0.20 through our reporting wrapper (per-second rows, the full latency "
            "histogram; with DBSTUDIES_RATE, open loop at that many transactions/s: "
            "<code>lua/dbs_openloop.lua</code>); <code>{…}</code>: the values the steps ran with.</p>"
            + "".join(lines))


_VARYING = ("--threads", "--rand-seed", "--mysql-socket", "DBSTUDIES_RATE")


def _numeric_first(value: str) -> tuple[float, str]:
    try:
        return float(value), value
    except ValueError:
        return float("inf"), value


def _varying(arg: str, seen: list[str]) -> str:
    """`arg` as the command shows it: a value that changes between steps as {the values}
    (threads, rates) or … (seeds, sockets).

    >>> _varying("--threads=8", ["--threads=8", "--threads=64"]), _varying("--rand-seed=1", ["--rand-seed=1", "--rand-seed=2"])
    ('--threads={8, 64}', '--rand-seed=…')
    """
    name = arg.split("=", 1)[0]
    if name not in _VARYING:
        return arg
    values = sorted({a.split("=", 1)[1] for a in seen}, key=_numeric_first)
    if len(values) == 1:
        return f"{name}={values[0]}"
    if name in ("--threads", "DBSTUDIES_RATE"):
        return f"{name}={{{', '.join(values)}}}"
    return f"{name}=…"
