"""The tables a report shows: the comparison layouts, a wide table in parts, folded details, the full
comparison and scaling tables, the tail note."""

from __future__ import annotations

import re
from typing import Any

from .. import analysis
from ..analysis import tails
from .described import _e
from .glance import inline_markdown
from .shown import LABELS, label, note, skip, table


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


def tail_note(steps: Any) -> None:
    """How many transactions the run's tail statistics rest on (`tails.resting_words`)."""
    note(tails.resting_words(steps))
