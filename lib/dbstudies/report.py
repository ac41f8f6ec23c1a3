"""What a study's notebook shows, for its report: the answer (verdicts, conclusion, the
settings that still differ), how the run was measured (`setup`), comparison tables, details
folded away, costs that moved, on-CPU profiles, and notes on sections that do not apply
(`skip`). `render` turns the executed notebook into report.html."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from . import analysis, ownership, plots, replicated, results, schedule, tails
from .analysis.said import answer_text, glance_markdown, tldr, verdict_summary
from .comparisons import server_cost, throughput
from .contract import Answer
from .described import _e, client_commands, configuration, data_sizes, design_line
from .glance import glance, grid, inline_markdown
from .instructions import count_functions  # noqa: F401 - the count's section, for the notebooks
from .render import scrub_paths
from .results import Run
from .shown import (  # noqa: F401 - notebooks call report.note, report.table, report.answer_here …
    LABELS,
    PROSE,
    SKIP,
    answer_here,
    conclusion,
    fill_here,
    first,
    label,
    note,
    number,
    percent_cell,
    skip,
    table,
)
from .study import load, params_of, reference
from .studykit import cpus_shared


def plan(study: Any, p: Any, run_dir: Any = None) -> None:
    """What the notebook is about to do, in one line: measure (`schedule.describe`: the
    steps, rounds, arms and about how long) — or, given an ended run, re-analyse it, measuring
    nothing."""
    if run_dir:
        run = Run.open(results.find_run(run_dir))
        if run.status != "running":
            done = results.how_far(run)["done"]
            print(f"Re-analysing run {run.path.name} ({run.status}, {done} measured steps): nothing is measured.")
            return
    print(schedule.describe(study, p))


def where(run: Run) -> str:
    """Where the notebook writes: the run directory, or a re-analysis variant's folder in it."""
    if run.variant:
        return (f"re-analysis variant {run.variant}: its report and figures go to {run.output_dir}; "
                f"what run {run.path.name} wrote stays as it is")
    return f"run directory: {run.path}"


def comparison(layout: "Any", rel: "Any", *, empty: str | None = None) -> None:
    """Show a comparison's layout table (what it can detect is said once, in the conclusion:
    `stats.reachability`); `empty`: what to say instead when there is nothing to compare."""
    from IPython.display import display
    if rel.empty:
        skip(empty or "Nothing to compare: an arm has no measurements.")
        return
    display(table(layout))


KEYS = ("cost", "candidate", "baseline", "arm", "workload", "threads", "query", "offered", "n")
MAX_COLUMNS = 14  # a wider table is cut at 1,300 px: it is shown in parts, its key columns in each


def parts(frame: Any, most: int = MAX_COLUMNS) -> list[Any]:
    """A wide table as tables of at most `most` columns, each repeating its leading key
    columns (`KEYS`: what names a row).

    An interval is never split: a value and its `_low`/`_high` ends stay in one part.

    >>> import pandas as pd
    >>> [list(p.columns) for p in parts(pd.DataFrame(columns=["workload", "arm", "a", "b", "c"]), 4)]
    [['workload', 'arm', 'a', 'b'], ['workload', 'arm', 'c']]
    >>> [list(p.columns)[1:] for p in parts(pd.DataFrame(columns=["arm", "a", "x_ms", "x_low", "x_high"]), 4)]
    [['a'], ['x_ms', 'x_low', 'x_high']]
    """
    columns = list(frame.columns)
    if len(columns) <= most:
        return [frame]
    keys = []
    for c in columns:
        if c not in KEYS:
            break
        keys.append(c)
    step = max(most - len(keys), 1)
    groups: list[list[str]] = []
    for c in columns[len(keys):]:
        if groups and _stem(groups[-1][-1]) == _stem(c):
            groups[-1].append(c)
        else:
            groups.append([c])
    out: list[list[str]] = [[]]
    for g in groups:
        if out[-1] and len(out[-1]) + len(g) > step:
            out.append([])
        out[-1] += g
    return [frame[keys + p] for p in out]


def _stem(column: str) -> str:
    """What a column of an interval is of: 'run_p99' for run_p99_ms, _low and _high."""
    return re.sub(r"_(?:ms|low|high)(?:_pct)?$", "", str(column)) if re.search(r"_(?:low|high|ms)(?:_pct)?$", str(column)) else str(column)


def details(title: str, shown: Any, caption: str = "") -> None:
    """A detailed table, collapsed under `title` (the reader opens it when needed):
    `shown` a DataFrame or a `table(...)` (a wide one shown in `parts`); `caption` what its
    columns mean (inline Markdown; a column named in code is written as its label)."""
    from IPython.display import HTML, display
    from pandas.io.formats.style import Styler
    frame = shown.data if isinstance(shown, Styler) else shown
    pieces = [table(p) for p in parts(frame)] if len(frame.columns) > MAX_COLUMNS else [
        shown if isinstance(shown, Styler) else table(shown)]
    caption = re.sub(r"`(\w+)`", lambda m: f"“{label(m.group(1))}”" if m.group(1) in LABELS else m.group(0), caption)
    display(HTML(f"<details class='dbs-details'><summary>{_e(title)}</summary>"
                 + (f"<p>{inline_markdown(caption)}</p>" if caption else "")
                 + "".join(s.to_html() for s in pieces) + "</details>"))


FULL_COMPARISON = ["candidate", "workload", "threads", "median_baseline", "median_candidate", "delta_pct",
                   "holm_ci_low_pct", "holm_ci_high_pct", "p_value", "p_holm", "verdict", "mde_pct", "sd_diff",
                   "df", "rank_ratio", "p_rank"]
SCALING_SUMMARY = ["workload", "arm", "threads", "qps_n", "qps_median", "qps_min", "qps_max", "qps_cv_pct",
                   "p99_median", "p99_min", "p99_max", "p99_cv_pct", "run_p99_ms", "run_p99_low", "run_p99_high",
                   "cpu_server_pct", "cpu_client_pct", "busy_steps", "remeasured"]


def full_comparison(rel: Any, what: str = "QPS") -> None:
    """The whole comparison table behind a layout (folded away): every figure the verdict
    rule used, per cell, against the baseline."""
    details(f"{what}: the full comparison table", table(analysis.in_percent(rel), FULL_COMPARISON),
            f"The full {what} comparison table, against {rel['baseline'].iloc[0] if 'baseline' in rel and len(rel) else 'the baseline'}. "
            "The difference is of geometric means, its interval Holm-adjusted (the level Holm's step-down tests "
            "the cell at); `p_value` (paired: one-sample t on the pairs' log ratios, with `sd_diff` on `df` "
            "degrees of freedom, `prior_df` of them borrowed from the other cells; blocks: Welch on logs) and "
            "`p_holm` Holm-corrected across this table; `mde_pct`: the cell's minimum detectable effect (its own "
            "noise, this table's number of comparisons); `rank_ratio` and `p_rank`: the distribution-free "
            "robustness columns (Hodges–Lehmann ratio; paired: Wilcoxon signed-rank p, blocks: Mann–Whitney p).")


def scaling_summary(summary: Any) -> None:
    """Per workload × arm × threads of a scaling study (thread pool, versions): QPS, p99, CPU
    and the host's busy steps, folded away."""
    details("Summary per configuration", table(analysis.in_percent(summary), SCALING_SUMMARY),
            "QPS: median, min, max and CV (run-to-run coefficient of variation, %); p99 latency in ms (CV in "
            "%) — the steps' p99s, then the p99 of all the configuration's transactions (every step's histogram "
            "merged: percentiles cannot be averaged) with a 95 % CI from resampling whole rounds; verdicts stay "
            "on the paired per-step p99; CPU in % of one core; `busy_steps`: steps still measured on a busy host "
            "(other processes or the hypervisor took CPU) after their retries; `remeasured`: attempts discarded "
            "because the host was busy and measured again.")


COST_COLUMNS = ["cost", "workload", "threads", "candidate", "median_baseline", "median_candidate",
                "delta_pct", "holm_ci_low_pct", "holm_ci_high_pct", "p_holm", "verdict", "mde_pct"]


def costs(moved: Any, tables: dict[str, Any]) -> None:
    """Why a verdict came out as it did: per cell judged better or worse, the costs per
    transaction that moved (`analysis.costs.moved`), then every cost's comparison, collapsed."""
    import pandas as pd
    from IPython.display import Markdown, display

    from .analysis import in_percent
    if not tables:
        skip("This run recorded no per-transaction costs (measured before they were recorded).")
        return
    if moved.empty:
        display(Markdown("*No cell was judged better or worse, so there is no verdict to explain; "
                         "every cost's comparison is below.*"))
    else:  # the costs wrap in their column: one line each would push the table off the page
        display(Markdown("*CPU costs first, by the points of throughput change they account for "
                         "if the CPUs are the limit (the budget above); the other costs after, by "
                         "size: they say how the work changed, not how much of the verdict it explains.*"))
        display(table(moved).set_properties(subset=["costs that moved"],
                                            **{"white-space": "normal", "min-width": "30em"}))
    every = pd.concat([in_percent(t) for t in tables.values()], ignore_index=True)
    details("Every cost per transaction, compared", table(every, [c for c in COST_COLUMNS if c in every]),
            "Each cost is its own Holm family (lower is better): server and client CPU µs, their "
            "threads' context switches, KB read and written by the server process and by its "
            "datadir's device (the device's figures include anything else on it), redo bytes and "
            "rows read (MySQL: `Innodb_rows_read`; MariaDB: `Rows_read`) — each counter's increase "
            "over the step's transactions. A cell is "
            "compared where every step has the cost above zero. The two medians are each arm's own "
            "steps; the difference is the paired one (per-round ratios), the only estimate the "
            "verdicts, the CPU budget and the sentences use — where rounds drift, a median can fall "
            "while the paired difference rises.")


def cpu_budget(said: Answer, run: Run) -> None:
    """The server's own answer per compared cell (`analysis.server_view`), then the CPU
    budget of every cell the throughput verdicts judged better or worse
    (`analysis.caveats.budget`): CPU used by server and client, their µs per transaction, the
    throughput change that cost predicts if the CPUs are the limit next to the measured one,
    and the client's share of the extra CPU."""
    from IPython.display import Markdown, display

    from .analysis import caveats, server_view
    key = throughput(said.comparisons)
    cpus = cpus_shared(params_of(run), (run.metadata.get("host") or {}).get("cpus") or 0)
    view = server_view.table(said.tables, key, server_cost(said.comparisons)) if key else None
    if view is not None and len(view):
        display(Markdown(
            "*The server's own answer, per compared cell: its CPU per transaction (paired, as the "
            "verdicts are) beside throughput. Where client and server share the CPUs and fill them, "
            "a server change k moves throughput by about 1 ÷ (1 + k ÷ (1 + f)) − 1, f = sysbench's CPU "
            "per server CPU µs — less than the server's change alone (1 ÷ (1 + k) − 1, its own CPUs): "
            "throughput *understates* it; where throughput moved more, sysbench's own cost moved too and "
            "throughput *overstates* it. The last column: how long the server's threads were runnable "
            "but waiting for a CPU, per transaction (schedstat run delay).*"))
        display(table(view))
    b = caveats.judged_budget(said.tables, key, cpus)
    if b.empty:
        skip("No cell was judged better or worse on throughput (or the run recorded no CPU per "
             "transaction): there is no verdict for a CPU budget to explain.")
        return
    display(Markdown(
        f"*The CPU budget of each judged cell: on this {cpus}-CPU host, server and client spend "
        "µs of CPU per transaction; if together they fill the CPUs, throughput can only be what "
        "those µs allow, so the change in µs per transaction predicts the change in throughput "
        "(baseline µs ÷ candidate µs − 1). Where the prediction matches the measured change, "
        "CPU per transaction explains the verdict — with the CPUs full, or with each transaction's "
        "own CPU setting its pace (few client threads); where it does not match, something else — "
        "waiting — sets the pace. A candidate's µs are the baseline's median times the paired "
        "difference of its cost table below (one estimate per quantity: an arm's own median can "
        "fall while the paired difference rises, when rounds drift).*"))
    display(table(caveats.budget_table(b, cpus)))


def positive_control(said: Answer, arms: list[Any]) -> None:
    """The positive control (`analysis.control`): what a pause of known size and timing must
    do to each metric, and per cell × metric whether the run's tables found it."""
    from IPython.display import Markdown, display

    from .analysis import control
    arm = control.control_arm(arms)
    found = said.tables.get("control")
    if arm is None or found is None or found.empty:
        skip("The positive control was off (`positive_control = {\"pause_ms\": 20, \"every_s\": 2}` "
             "turns it on).")
        return
    pause = arm.pause
    display(Markdown(f"*{arm.label} is the baseline's twin on a server of its own that "
                     f"{control.model(pause, found)}*"))
    display(Markdown("\n".join(control.lines(found, pause))))
    display(table(control.layout(found)))
    details("The positive control: what the pause must do and what each table found, per cell",
            table(found), "`expectation`: the pause's size against what the metric can see "
            "(the paused share against the cell's MDE; the share of transactions delayed against "
            "the percentile's tail); `measured`: the paused twin "
            "against the baseline with its 95 % CI.")


def shows(profiled: float, verdict: float) -> bool:
    """Whether profiled steps differ the way the verdict does: same sign, at least half its size.

    >>> shows(-2.9, -27.0), shows(-20.0, -27.0), shows(5.0, -10.0), shows(1.0, float("nan"))
    (False, True, False, True)
    """
    if verdict != verdict or profiled != profiled:
        return True
    return profiled * verdict > 0 and abs(profiled) >= abs(verdict) / 2


def cpu_profiles(run: Run, arms: list[Any]) -> None:
    """Where each arm's server spent its CPU in the profiled cells (`analysis.cpu_profiles`):
    per cell the flame graph of every arm, then per candidate the functions whose CPU per
    transaction changed against the baseline, judged across the profiled rounds, and its
    difference flame graph colouring only those; last, what
    profiling cost. The SVGs are also written to the run's (or the variant's) profiles/."""
    from IPython.display import HTML, Markdown, display

    from .analysis import cpu_profiles, signed
    views = cpu_profiles.views(run, arms)
    if not views:
        skip("No on-CPU profiles in this run (`cpu_profile = True` takes them after the plan).")
        return
    folder = run.output_dir / results.PROFILE_DIR  # a re-analysis variant keeps its own
    folder.mkdir(parents=True, exist_ok=True)
    for v in views:
        display(Markdown(f"**{v['title']}** — " + ", ".join(
            f"{a['arm']}: {a['samples']:,} samples at {a['tps']:,.0f} transactions/s"
            + (f" (median of {a['rounds']} rounds)" if a["rounds"] > 1 else "") for a in v["arms"])))
        for a in v["arms"]:
            (folder / f"flame-{results.slug(a['arm'])}-{v['workload']}-{v['threads']}.svg").write_text(a["svg"])
            display(HTML(f"<div class='dbs-flame'>{a['svg']}</div>"))
        for d in v["differences"]:
            if not shows(d["profiled_pct"], d["verdict_pct"]):
                display(Markdown(
                    f"**These profiles may not show the verdict's cause:** the profiled steps differ by "
                    f"{signed(d['profiled_pct'])} in throughput (median), the verdict by {signed(d['verdict_pct'])}; "
                    "read the differences below with that in mind."))
            display(Markdown(f"*{d['candidate']} against {v['arms'][0]['arm']}: the functions whose CPU per "
                             "transaction, with what they call, changed (µs: the share of the samples with the "
                             "function on the stack × the step's server CPU per transaction, paired round by "
                             "round; every function judged is in profiles/" + f"difference-{results.slug(d['candidate'])}-"
                             f"{v['workload']}-{v['threads']}.csv).* "
                             + cpu_profiles.said(d["judged"])))
            display(table(d["table"]))
            name = f"difference-{results.slug(d['candidate'])}-{v['workload']}-{v['threads']}"
            d["judged"].to_csv(folder / f"{name}.csv", index=False)  # every unit judged, not only those shown
            (folder / f"{name}.svg").write_text(d["svg"])
            display(HTML(f"<div class='dbs-flame'>{d['svg']}</div>"))
        if v["waits"] is not None:
            display(Markdown("*Waits inside the server during these steps (performance_schema, "
                             "where an arm turned it on): the events with the most time waited — "
                             "mutexes, rw-locks, file and table I/O, locks; idle connections and "
                             "threads asleep on a condition are left out.*"))
            display(table(v["waits"]))
        else:
            display(Markdown("*No arm ran with performance_schema on, so there are no wait events "
                             "to show: `-p settings '{\"performance_schema\": \"ON\"}'` turns it on for "
                             "every arm (MariaDB times mutex and rw-lock waits only with "
                             "`performance_schema_instrument: \"wait/synch/%=ON\"` too); its own cost "
                             "is then in every step of those arms.*"))
    cost = cpu_profiles.overhead(run, cpu_profiles.profiled(run))
    cost[cpu_profiles.CHANGE] = cost[cpu_profiles.CHANGE].map(signed)
    details("What profiling cost", table(cost), "Throughput of the profiled steps (their median) against "
            "the median of the same arm and cell measured without perf in this run (noise included; "
            "tests/benchmarks/profiling_overhead.py measures it in repeated pairs).")


def answer(said: Answer, run: Run | None = None) -> None:
    """The report's answer, the same for every study, in the order a busy reader wants it:
    at a glance — a line per comparison of the grid (`said.tldr`, at most eight) and the grid, a row per cell and a column
    per comparison, each effect with its interval coloured by its word (`grid`) —, the lead
    comparisons in words (those three open the report: `shown.first`), then the verdicts in
    one short table (`said.verdict_summary`), every other comparison, the source's
    claims and the caveats in words, and the study's conclusion (Markdown, computed from the
    tables). `dbstudies run` prints the glance's lines and the lead words, in plain text."""
    from IPython.display import display
    lines = tldr(said, run)
    if lines:
        first(glance_markdown(lines), printed=True)
    at_a_glance = grid(said)
    first(html=at_a_glance)
    fill_here(glance(lines, at_a_glance, "The answer in words, the tables and figures: the Answer section below"))
    words = answer_text(said, run)
    if words.lead:
        first(words.lead, printed=True)
    verdicts = verdict_summary(said)
    if len(verdicts):
        display(table(verdicts))
    note(words.more)  # the report's, not the terminal's: `dbstudies run` prints what opens it
    note(words.conclusion)
    if run is not None:
        replicated.section(run)  # a replication: did the original's answer hold here?


def finish(run: Run, said: Answer) -> None:
    """A study notebook's last cell: the run's end recorded (`ownership.finish`: complete, if
    this notebook measured it), the answer at a glance again — Run All leaves the view here —
    and the line that re-analyses the run without measuring it."""
    from IPython.display import display
    display({"text/html": glance(tldr(said, run), grid(said), "The Answer, in words, with its tables and figures")},
            raw=True, metadata={SKIP: True})  # first: Run All shows the last cell's top; the report opens with it
    ownership.finish(run)
    if run.status != "running" and not ownership.owns(run):  # a re-analysis: how to do it again, in the
        display({"text/plain": ownership.reanalyse_line(run)}, raw=True, metadata={SKIP: True})  # notebook only


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
    from .analysis import caveats
    from .stats import reachability
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

    meta = run.metadata
    plots.palette([a["label"] for a in meta.get("arms", [])])
    steps = results.measured(run) if run.has_table("steps") else None
    parts = [f"<p><b>Design.</b> {_e(design_line(meta, steps))}.</p>", *_judging(run, said)]
    governing = tuple(load(reference(meta)).GOVERNING) if meta.get("study") else ()
    for title, body in (("Servers: the settings that matter and what differs between arms",
                         configuration(meta, governing)),
                        ("Data against the buffer pool", data_sizes(meta)),
                        ("Client command", client_commands(meta))):
        if body:
            parts.append(f"<p><b>{_e(title)}.</b></p>{body}")
    cnfs = sorted(run.servers_dir.glob("*/my.cnf")) if run.servers_dir.is_dir() else []
    if cnfs:
        parts.append("<p><b>Each server's my.cnf</b>, as it started (in the run directory): " + " · ".join(
            f"<a href='{_e(Path(os.path.relpath(c, run.output_dir)).as_posix())}'>{_e(c.parent.name)}</a>"
            for c in cnfs) + "</p>")  # from the report: the run's, or a variant's two folders down
    display(HTML(f"<div class='dbs-setup'>{scrub_paths(''.join(parts), run)}</div>"))


def tail_note(steps: Any) -> None:
    """How many transactions the run's tail statistics rest on (`tails.resting_words`)."""
    note(tails.resting_words(steps))
