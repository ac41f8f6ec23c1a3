"""The answer as a report says it: at a glance (`tldr`, `grid`: a row per cell, a column per
comparison, each effect with its interval and its word), the verdicts in words (with the client's share of the CPU
where it explains a verdict), the comparisons moving apart along the threads, the source's
claims tested, the caveats of the run's own data — and the conclusion, with the server
settings that differ between the arms beyond those the study varied.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from .. import settings
from ..comparisons import primary, throughput
from ..contract import Answer
from ..results import Run
from ..study import params_of
from ..studykit import cpus_shared, pinned_apart
from . import CELL_KEYS, adjusted, caveats, cell_name, effect, field, word_of, words


@dataclass
class Said:
    """The answer in words, in the order a report shows it: `lead` (the lead comparisons'
    verdicts in words — the primary one and those measured to a target — and where the
    typical and slowest transactions move apart), `more` (every other comparison's words,
    the source's claims tested, the caveats of the run's own data) and `conclusion` (the
    study's, with what else differs between the arms). Markdown each."""
    lead: str
    more: str
    conclusion: str


def answer_text(said: Answer, run: Run | None = None) -> Said:
    """The answer in words (`Said`), as `report.answer` shows it and `dbstudies run` prints it."""
    tables = said.verdict_tables()
    key = throughput(said.comparisons)
    meta = run.metadata if run is not None else {}
    p = params_of(run) if run is not None else None
    cpus = cpus_shared(p, (meta.get("host") or {}).get("cpus") or 0)
    pinned = pinned_apart(p) if run is not None else True
    b = caveats.judged_budget(said.tables, key, cpus) if run is not None and key else None
    client = caveats.client_explained(b, pinned) if b is not None else None
    decides = caveats.client_decides(b, pinned) if b is not None else None
    name = next((n for n, k in said.verdicts.items() if k == key), None)
    per_table = dict(zip(tables, [words.paragraph(n, rel, client if n == name else None, cpus)
                                  for n, rel in tables.items()]))
    leading = lead_words(said, p)
    lead = [w for n, w in per_table.items() if n in leading and w] + words.moving_apart(tables)
    more = [w for n, w in per_table.items() if n not in leading and w]
    if said.claims:
        more.append("**The source's claims, tested here:**\n\n" + "\n".join(
            f"- {line}" for line in words.claims_held(said.claims, said.tables, client, pinned, cpus, decides)))
    warn = caveats.caveats(run, p, said.tables, key) if run is not None else []
    if warn:
        more.append("**Caveats from this run's data:**\n\n" + "\n".join(f"- {c}" for c in warn))
    differ = settings.differences_line(run.metadata) if run is not None else ""
    if differ and settings.beyond_varied(run.metadata):
        differ = ""  # a caveat above says it
    return Said("\n\n".join(lead), "\n\n".join(more), said.conclusion + (f"\n\n{differ}" if differ else ""))


def lead_words(said: Answer, p: Any = None) -> list[str]:
    """The verdict tables (by their words) the answer leads with: the primary comparison and
    every one the run measured to a precision target."""
    if not said.comparisons:
        return list(said.verdicts)[:1]
    aimed = set(getattr(p, "target", None) or {})
    first = primary(said.comparisons)
    return [c.words for c in said.comparisons if c is first or (c.judged and c.key in aimed)]


# ---------------------------------------------------------------- the answer at a glance

GRID_FIELDS = ("candidate", "comparison", "entry", "delta_pct", "word", "n", "unit", "short")  # the rest: a cell's keys


def grid(said: Answer) -> pd.DataFrame:
    """The answer at a glance, long form: one row per cell × candidate × comparison shown at a
    glance (`Comparison.at_glance`: the judged ones and p50, in the study's order): the effect with its Holm-adjusted interval
    (`entry`; `delta_pct` alone), its `word` (`word_of`), the cell's pairs (or repeats), and whether the cell
    was left `short` of its precision target. `report.grid` draws it, a row per cell and a
    column per comparison."""
    rows = []
    for c in (c for c in said.comparisons if c.at_glance):
        rel = said.tables.get(c.key)
        if rel is None or rel.empty:
            continue
        by = [k for k in dict.fromkeys((*c.by, *CELL_KEYS)) if k in rel]
        for r in rel.itertuples(index=False):
            n = field(r, "n_baseline")
            entry = (str(r.verdict).split(":")[0] if r.delta_pct != r.delta_pct else  # its why: the tables below
                     effect(r, *adjusted(r)))
            rows.append({"candidate": r.candidate, **{k: getattr(r, k) for k in by}, "comparison": c.short,
                         "entry": entry, "delta_pct": r.delta_pct, "word": word_of(r),
                         "n": int(n) if n is not None and n == n else None,
                         "unit": "pair" if "sd_diff" in rel else "repeat", "short": bool(field(r, "short") or False)})
    return pd.DataFrame(rows)


def glance_markdown(lines: list[str]) -> str:
    """The glance's lines (`tldr`) as the report shows them and `dbstudies run` prints them."""
    return "\n".join(f"- {line}" for line in lines)


def tldr(said: Answer, run: Run | None = None, most: int = 7) -> list[str]:
    """At most `most` lines a busy reader takes in at once, Markdown: per comparison of the grid
    its verdict counts, the largest effect among the cells measured to their target (with
    its interval), and how many cells were left short; the study's own decisive lines
    (`Answer.headline`); then, where the run's own CPU budget puts a judged change on a
    client sharing the server's CPUs, that."""
    g = grid(said)
    lines = []
    server_cost = {c.short: c for c in said.comparisons if c.server_cost}
    for comparison, part in (g.groupby("comparison", sort=False) if len(g) else []):
        counts = part["word"].value_counts()
        order = ["better", "worse", "same", "within target", "undecided", "draw"]
        said_counts = ", ".join(f"{counts[w]} {w}" for w in [*order, *(w for w in counts.index if w not in order)]
                                if w in counts)
        decided = part[part["word"].isin(["better", "worse"]) & ~part["short"]]
        top = ""
        if len(decided):
            big = decided.loc[decided["delta_pct"].abs().idxmax()]
            top = f"; largest {big['entry']} ({_cell(big)})"
        short = int(part["short"].sum())
        lines.append(f"**{comparison}** ({len(part)} cell{'s' if len(part) != 1 else ''}): {said_counts}{top}"
                     + (f"; {short} cell{'s' if short != 1 else ''} left short of the target" if short else "")
                     + (_f_words(said, server_cost[comparison]) if comparison in server_cost else ""))
    lines += said.headline  # the study's own decisive lines
    if run is not None and len(lines) < most:
        note = _client_note(said, run)
        if note:
            lines.append(note)
    return lines[:most]


def _f_words(said: Answer, c: Any) -> str:
    """'; f 0.52–0.98 (sysbench's CPU per server CPU µs): …' for the server's own cost line
    (`c`: its comparison, whose table names the baseline)."""
    rel = said.tables.get(c.key)
    f = caveats.client_per_server(said.tables.get("steps"), rel["baseline"].iloc[0]) \
        if rel is not None and len(rel) and "baseline" in rel else pd.Series(dtype=float)
    if f.empty:
        return ""
    span = f"{f.min():.2f}" if f.min().round(2) == f.max().round(2) else f"{f.min():.2f}–{f.max():.2f}"
    return (f"; f {span} (sysbench's CPU per server CPU µs): on CPUs they share and fill, "
            "a server change k shows in QPS as about k / (1 + f)")


def _cell(r: Any) -> str:
    keys = [k for k in r.index if k not in GRID_FIELDS
            and r[k] == r[k] and r[k] is not None]
    cell = cell_name({k: r[k] for k in keys})
    return cell if not r.get("candidate") else f"{r['candidate']}, {cell}"


def _client_note(said: Answer, run: Run) -> str:
    """One line where the run's CPU budget puts most of a judged throughput change on the
    client (`caveats.client_explained`): how many such cells, and what that means."""
    key = throughput(said.comparisons)
    p = params_of(run)
    cpus = cpus_shared(p, (run.metadata.get("host") or {}).get("cpus") or 0)
    if not key or not cpus:
        return ""
    client = caveats.client_explained(caveats.judged_budget(said.tables, key, cpus), pinned_apart(p))
    if client is None or client.empty:
        return ""
    n = len(client)
    return (f"**Client and server share {cpus} CPUs**: in {n} judged cell{'s' if n != 1 else ''} most of the "
            "change in CPU per transaction is sysbench's own — a measure of both, not of the server alone")
