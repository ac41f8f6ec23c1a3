"""How a report shows what the analysis computed: a DataFrame as a table (readable numbers,
columns named in words), a line of text computed from the run, a section that does not apply,
a conclusion `dbstudies run` prints — the pieces every report section is made of (`report`)."""
from __future__ import annotations

import html
import re
from typing import Any

SKIP = "dbstudies/skip"  # output metadata: "this section does not apply" (`skip`); `render` leaves it out
CONCLUSION = "dbstudies/conclusion"  # output metadata that marks a study's conclusion (`conclusion`)
FIRST = "dbstudies/first"  # output metadata: what a report opens with, under its title (`first`)


_here: dict[str, Any] = {}  # the display `answer_here` made, for `report.answer` to fill in


def answer_here() -> None:
    """A study notebook's top: where it shows the answer at a glance once the run below is
    analysed (`fill_here`), so that an executed notebook opens on its answer, not on its
    parameters. The report leaves it out (`SKIP`): it opens with the same answer anyway."""
    from IPython.display import Markdown, display
    _here["handle"] = display(Markdown("*The answer at a glance shows here once the run below is analysed.*"),
                              metadata={SKIP: True}, display_id=True)


def fill_here(html_text: str) -> None:
    """Show `html_text` where `answer_here` stood in this pass (nothing if it did not run)."""
    handle = _here.pop("handle", None)
    if handle is not None:
        handle.update({"text/html": html_text}, raw=True, metadata={SKIP: True})


def skip(text: str) -> None:
    """Say in the notebook why a section does not apply to this run; the report leaves the
    note out, and with it the section when nothing else in it shows."""
    from IPython.display import Markdown, display
    display(Markdown(f"*{text}*"), metadata={SKIP: True})


def note(text: str) -> None:
    """Show a line of text computed from the run (Markdown), in the notebook and the report:
    what a static narrative cell cannot know, e.g. which design the run used."""
    from IPython.display import Markdown, display
    if text:
        display(Markdown(text))


def number(v: Any) -> str:
    """A table cell: 12,345 · 0.012 · 1.23 · −4.5 · < 0.001 · text as it is.

    >>> number(12345.6), number(0.012345), number(1.2345), number(3), number("draw"), number(-4.5), number(4.2e-07)
    ('12,346', '0.012', '1.23', '3', 'draw', '−4.5', '< 0.001')
    """
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if v != v:  # NaN
        return "–"
    if v != 0 and abs(v) < 0.001:
        return "< 0.001" if v > 0 else "> −0.001"
    text = f"{v:,.0f}" if abs(v) >= 100 or float(v).is_integer() else f"{v:.2g}" if abs(v) < 1 else f"{v:.3g}"
    return text.replace("-", "−")


def percent_cell(v: Any) -> str:
    """A % column's cell: as `number`, but a size past ±10,000 % (an unbounded interval, a
    design that cannot tell) as '> 10,000'.

    >>> percent_cell(17039743.8), percent_cell(-12.34), percent_cell(float("nan"))
    ('> 10,000', '−12.3', '–')
    """
    if isinstance(v, (int, float)) and v == v and abs(v) > 10_000:
        return "> 10,000" if v > 0 else "< −10,000"
    return number(v)


# how a report names the columns of the library's tables (any other: underscores as spaces)
LABELS = {
    "median_baseline": "median, baseline", "median_candidate": "median, candidate",
    "n_baseline": "n, baseline", "n_candidate": "n, candidate", "delta_pct": "difference %",
    "ci_low_pct": "95 % CI from %", "ci_high_pct": "95 % CI to %",
    "holm_ci_low_pct": "Holm-adjusted from %", "holm_ci_high_pct": "Holm-adjusted to %",
    "p_value": "p", "p_holm": "p after Holm", "mde_pct": "smallest detectable %",
    "sd_diff": "SD of the pairs' log ratios", "df": "degrees of freedom", "prior_df": "borrowed degrees of freedom",
    "rank_ratio": "Hodges–Lehmann ratio", "rank_ci_level": "its CI level", "p_rank": "p, rank test",
    "rank_ci_low_pct": "rank CI from %", "rank_ci_high_pct": "rank CI to %",
    "cv_baseline": "CV, baseline", "cv_candidate": "CV, candidate",
    "cpu_server_pct": "server CPU % of a core", "cpu_client_pct": "client CPU % of a core",
    "busy_steps": "steps on a busy host", "remeasured": "attempts measured again",
    "shift_pct": "true difference %", "tables_any_verdict": "tables with a non-draw",
    "cells_better": "cells better", "cells_worse": "cells worse",
    "tail_ratio": "tail ratio p99 ÷ p50",
    "verdict_original": "verdict, original", "delta_pct_original": "effect, original %",
    "verdict_replica": "verdict, here", "delta_pct_replica": "effect, here %",
    "said_original": "verdict, original", "said_replica": "verdict, here",
    "ratio_of_ratios": "ratio of the effects", "rr_ci_low": "its 95 % CI from", "rr_ci_high": "to",
    "rr_holm_low": "its Holm-adjusted 95 % CI from", "rr_holm_high": "to",
    "word": "replication", "tau_pct": "τ, between runs %", "i2": "I²", "p_het": "p, runs differ",
    "p_het_holm": "p, runs differ, after Holm", "mde_runs_pct": "smallest detectable %, one run",
    "run_p99_ms": "p99 of all its transactions", "run_p99_low": "its 95 % CI from", "run_p99_high": "to",
}


def label(column: Any) -> str:
    """A column as a reader names it: `LABELS`, else a code name's words ('qps_cv_pct' →
    'qps cv %'); a header that is already words (a layout's "pool vs per-connection ·
    /usr/share/sysbench/oltp_point_select.lua") is kept as it is, a workload's name whole.

    >>> label("qps_cv_pct"), label("pool vs one · oltp_point_select")
    ('qps cv %', 'pool vs one · oltp_point_select')
    """
    c = str(column)
    if c in LABELS:
        return LABELS[c]
    return c.replace("_pct", " %").replace("_", " ") if re.fullmatch(r"[a-z0-9_]+", c) else c


def table(df: "Any", columns: list[str] | None = None):
    """A DataFrame as a report shows it: chosen columns (those it has: a blocks run's
    comparison has no `sd_diff`), no index column, readable numbers (typographic minus, no
    e-notation), columns named in words (`label`)."""
    view = df[[c for c in columns if c in df.columns]] if columns else df
    import pandas as pd
    from pandas.api.types import is_numeric_dtype
    text = [c for c in view.columns if not is_numeric_dtype(view[c])]
    pct = [c for c in view.columns if str(c).endswith("_pct") and c not in text]
    prose = [c for c in text if view[c].astype(str).str.len().max() > PROSE] if len(view) else []
    styled = (view.style.hide(axis="index").format(number, escape="html")  # "<derived2>" is text
              .format(percent_cell, subset=pct)
              .set_properties(subset=text, **{"text-align": "left"})
              .format_index(lambda c: html.escape(label(c)), axis="columns")
              .set_table_attributes("class='dbs-table'"))
    if prose:  # long text wraps in its column (cells are one line otherwise): the table fits the page
        styled = styled.set_td_classes(pd.DataFrame("dbs-prose", index=view.index, columns=prose))
    return styled


PROSE = 32  # characters: a text column with a longer value wraps (a script path, a list of costs)


def conclusion(markdown: str) -> None:
    """Show a study's conclusion (Markdown), marked so that `dbstudies run` can print it."""
    from IPython.display import Markdown, display
    display(Markdown(markdown), metadata={CONCLUSION: True})


def first(markdown: str = "", html: str = "", *, printed: bool = False) -> None:
    """Show what a report opens with — under its title and set-up line, before any other
    prose (`render` moves it there): the answer at a glance, the lead words. In the notebook
    it stands where it is shown. `printed`: `dbstudies run` prints it too (its Markdown)."""
    from IPython.display import display
    data = {**({"text/html": html} if html else {}), **({"text/markdown": markdown} if markdown else {})}
    if data:
        display(data, raw=True, metadata={FIRST: True, **({CONCLUSION: True} if printed and markdown else {})})
