"""What a study's notebook shows, for its report: the answer (verdicts, conclusion, the
settings that still differ), how the run was measured (`setup`), comparison tables, details
folded away, costs that moved, on-CPU profiles, and notes on sections that do not apply
(`skip`). `render` turns the executed notebook into report.html."""
from __future__ import annotations

import re
from typing import Any

from . import analysis, plots, results
from .analysis import settings
from .render import (
    CONCLUSION,
    SKIP,
    _e,
    client_commands,
    configuration,
    data_sizes,
    design_line,
    scrub_paths,
)
from .results import Run
from .studykit import Answer


def skip(text: str) -> None:
    """Say in the notebook why a section does not apply to this run; the report leaves the
    note out, and with it the section when nothing else in it shows."""
    from IPython.display import Markdown, display
    display(Markdown(f"*{text}*"), metadata={SKIP: True})


def number(v: Any) -> str:
    """A table cell: 12,345 · 0.0123 · 1.23 · text as it is.

    >>> number(12345.6), number(0.012345), number(1.2345), number(3), number("draw")
    ('12,346', '0.0123', '1.23', '3', 'draw')
    """
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if v != v:  # NaN
        return "–"
    return f"{v:,.0f}" if abs(v) >= 100 or float(v).is_integer() else f"{v:.3g}"


def table(df: "Any", columns: list[str] | None = None):
    """A DataFrame as a report shows it: chosen columns (those it has: a blocks run's
    comparison has no `sd_diff`), no index column, readable numbers, headers that may wrap
    at their underscores (so that wide tables fit the page)."""
    view = df[[c for c in columns if c in df.columns]] if columns else df
    from pandas.api.types import is_numeric_dtype
    text = [c for c in view.columns if not is_numeric_dtype(view[c])]
    return (view.style.hide(axis="index").format(number, escape="html")  # "<derived2>" is text
            .set_properties(subset=text, **{"text-align": "left"})
            .format_index(lambda c: str(c).replace("_", "_<wbr>"), axis="columns")
            .set_table_attributes("class='dbs-table'"))


def comparison(layout: "Any", rel: "Any", *, empty: str | None = None) -> None:
    """Show a comparison's layout table (what it can detect is said once, in the conclusion:
    `stats.reachability`); `empty`: what to say instead when there is nothing to compare."""
    from IPython.display import display
    if rel.empty:
        skip(empty or "Nothing to compare: an arm has no measurements.")
        return
    display(table(layout))


def _inline(text: str) -> str:
    """Markdown's inline code and bold as HTML, the rest escaped."""
    out = _e(text)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)


def details(title: str, shown: Any, caption: str = "") -> None:
    """A detailed table, collapsed under `title` (the reader opens it when needed):
    `shown` a DataFrame or a `table(...)`; `caption` what its columns mean (inline Markdown)."""
    from IPython.display import HTML, display
    from pandas.io.formats.style import Styler
    styler = shown if isinstance(shown, Styler) else table(shown)
    display(HTML(f"<details class='dbs-details'><summary>{_e(title)}</summary>"
                 + (f"<p>{_inline(caption)}</p>" if caption else "") + styler.to_html() + "</details>"))


COST_COLUMNS = ["cost", "workload", "threads", "candidate", "median_baseline", "median_candidate",
                "delta_pct", "ci_low_pct", "ci_high_pct", "p_holm", "verdict", "mde_pct"]


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
        display(table(moved).set_properties(subset=["costs that moved"],
                                            **{"white-space": "normal", "min-width": "30em"}))
    every = pd.concat([in_percent(t) for t in tables.values()], ignore_index=True)
    details("Every cost per transaction, compared", table(every, [c for c in COST_COLUMNS if c in every]),
            "Each cost is its own Holm family (lower is better): server and client CPU µs, their "
            "threads' context switches, KB read and written by the server process and by its "
            "datadir's device (the device's figures include anything else on it), redo bytes and "
            "rows read (MySQL: `Innodb_rows_read`; MariaDB: `Rows_read`) — each counter's increase "
            "over the step's transactions. A cell is "
            "compared where every step has the cost above zero.")


def cpu_profiles(run: Run, arms: list[Any]) -> None:
    """Where each arm's server spent its CPU in the profiled cells (`analysis.profiles`):
    per cell the flame graph of every arm, then per candidate the functions whose CPU per
    transaction moved most against the baseline and its difference flame graph; last, what
    profiling cost. The SVGs are also written to the run's profiles/."""
    from IPython.display import HTML, Markdown, display

    from .analysis import profiles, signed
    views = profiles.views(run, arms)
    if not views:
        skip("No on-CPU profiles in this run (`cpu_profile = True` takes them after the plan).")
        return
    folder = run.folder(results.PROFILE_DIR)
    for v in views:
        display(Markdown(f"**{v['title']}** — " + ", ".join(
            f"{a['arm']}: {a['samples']:,} samples at {a['tps']:,.0f} transactions/s" for a in v["arms"])))
        for a in v["arms"]:
            (folder / f"flame-{results.slug(a['arm'])}-{v['workload']}-{v['threads']}.svg").write_text(a["svg"])
            display(HTML(f"<div class='dbs-flame'>{a['svg']}</div>"))
        for d in v["differences"]:
            display(Markdown(f"*{d['candidate']} against {v['arms'][0]['arm']}: the functions whose own CPU "
                             "per transaction changed most (µs: the function's share of the samples × the "
                             "step's server CPU per transaction).*"))
            display(table(d["table"]))
            (folder / f"difference-{results.slug(d['candidate'])}-{v['workload']}-{v['threads']}.svg"
             ).write_text(d["svg"])
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
    cost = profiles.overhead(run, profiles.profiled(run))
    cost[profiles.CHANGE] = cost[profiles.CHANGE].map(signed)
    details("What profiling cost", table(cost), "Throughput of each profiled step against the median "
            "of the same arm and cell measured without perf in this run (one step each: noise "
            "included; tests/benchmarks/profiling_overhead.py measures it in repeated pairs).")


def answer(said: Answer, run: Run | None = None) -> None:
    """The report's answer, the same for every study: its verdicts in one short table
    (`analysis.verdict_summary` of `said.verdict_tables()`), then its conclusion (Markdown,
    computed from the tables; printed by `dbstudies run`); with `run`, the settings that
    still differ between its arms' servers, which the verdicts include."""
    from IPython.display import display
    verdicts = analysis.verdict_summary(said.verdict_tables())
    if len(verdicts):
        display(table(verdicts))
    differ = settings.differences_line(run.metadata) if run is not None else ""
    conclusion(said.conclusion + (f"\n\n{differ}" if differ else ""))


def setup(run: Run, tables: dict[str, Any] | None = None) -> None:
    """How the run was measured, for judging its answer: the design in one line, what each
    comparison table could detect (said once here), the servers' settings that matter and
    what differs between arms, the data against each buffer pool, the client command.
    It comes before the figures: the arms get their colours here, baseline first, so a
    configuration has the same colour in every figure whatever order a figure meets it in."""
    from IPython.display import HTML, display

    from .stats import reachability
    meta = run.metadata
    plots.palette([a["label"] for a in meta.get("arms", [])])
    parts = [f"<p><b>Design.</b> {_e(design_line(meta))}.</p>"]
    reach = [(name, reachability(rel)) for name, rel in (tables or {}).items()
             if rel is not None and not rel.empty and "mde_pct" in rel]
    if reach:
        parts.append("<p><b>What the comparisons can detect.</b></p><ul>" + "".join(
            f"<li>{_e(name)}: {_e('. '.join(lines))}.</li>" for name, lines in reach) + "</ul>")
    for title, body in (("Servers: the settings that matter and what differs between arms", configuration(meta)),
                        ("Data against the buffer pool", data_sizes(meta)),
                        ("Client command", client_commands(meta))):
        if body:
            parts.append(f"<p><b>{_e(title)}.</b></p>{body}")
    display(HTML(f"<div class='dbs-setup'>{scrub_paths(''.join(parts), run)}</div>"))


def conclusion(markdown: str) -> None:
    """Show a study's conclusion (Markdown), marked so that `dbstudies run` can print it."""
    from IPython.display import Markdown, display
    display(Markdown(markdown), metadata={CONCLUSION: True})
