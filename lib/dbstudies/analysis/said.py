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

from .. import stats
from ..core.comparisons import Comparison, primary, throughput
from ..kit.contract import Answer
from ..kit.study import params_of
from ..store import settings
from ..store.cpus import cpus_shared, pinned_apart
from ..store.results import Run
from . import budget, caveats, claims, findings, words


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
    p = params_of(run) if run is not None else None
    r = run.record if run is not None else None
    cpus = cpus_shared(p, r.host.cpus if r is not None else 0)
    pinned = pinned_apart(p) if run is not None else True
    b = budget.judged_budget(said.tables, key, cpus) if run is not None and key else None
    client = budget.client_explained(b, pinned) if b is not None else None
    decides = budget.client_decides(b, pinned) if b is not None else None
    name = next((n for n, k in said.verdicts.items() if k == key), None)
    per_table = dict(zip(tables, [words.paragraph(n, rel, client if n == name else None, cpus)
                                  for n, rel in tables.items()]))
    leading = lead_words(said, p)
    lead = [w for n, w in per_table.items() if n in leading and w] + words.moving_apart(tables)
    more = [w for n, w in per_table.items() if n not in leading and w]
    if said.claims:
        more.append("**The source's claims, tested here:**\n\n" + "\n".join(
            f"- {line}" for line in claims.claims_held(said.claims, said.tables, client, pinned, cpus, decides)))
    warn = caveats.caveats(run, p, said.tables, key) if run is not None else []
    if warn:
        more.append("**Caveats from this run's data:**\n\n" + "\n".join(f"- {c}" for c in warn))
    differ = settings.differences_line(r) if r is not None else ""
    if differ and settings.beyond_varied(r):
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
    """The answer at a glance, long form (`findings.of_answer`): one row per cell × candidate ×
    comparison shown at a glance, in the study's order — the effect with its Holm-adjusted
    interval (`entry`; `delta_pct` alone), its `word`, the cell's pairs (or repeats), and
    whether the loop left the cell `short` of the run's target. `glance.grid` draws it, a row
    per cell and a column per comparison."""
    return pd.DataFrame([{"candidate": r.candidate, **dict(r.cell), "comparison": r.comparison, "entry": r.entry,
                          "delta_pct": r.delta_pct, "word": r.word, "n": r.n, "unit": r.unit, "short": r.short}
                         for f in findings.of_answer(said) for r in f.rows])


def glance_markdown(lines: list[str]) -> str:
    """The glance's lines (`tldr`) as the report shows them and `dbstudies run` prints them."""
    return "\n".join(f"- {line}" for line in lines)


def tldr(said: Answer, run: Run | None = None, most: int = 8) -> list[str]:
    """At most `most` lines a busy reader takes in at once, Markdown: per comparison of the grid
    its line (`findings.Findings.line`: the counts, the largest effect), the cells left short
    of the target once (`findings.short_line`), the steps measured on a busy host (`busy_line`);
    the study's own decisive lines (`Answer.headline`); then, where the run's own CPU budget puts
    a judged change on a client sharing the server's CPUs, that."""
    server_cost = {c.short: c for c in said.comparisons if c.server_cost}
    found = findings.of_answer(said)
    by_key = {c.key: f for f in found for c in said.comparisons if c.short == f.comparison}
    over = {c.short: by_key[c.over] for c in said.comparisons if c.over in by_key}
    lines = []
    for f in found:
        moved = findings.moved_by(f, over[f.comparison]) if f.comparison in over else ""
        lines.append(f.line() + (_f_words(said, server_cost[f.comparison]) if f.comparison in server_cost else "")
                     + (f"; {moved}" if moved else ""))
    lines += [x for x in (findings.short_line(found), busy_line(said.tables.get("steps"))) if x]
    lines += said.headline  # the study's own decisive lines
    if run is not None and len(lines) < most:
        note = _client_note(said, run)
        if note:
            lines.append(note)
    return lines[:most]


def busy_line(steps: pd.DataFrame | None) -> str:
    """'**Busy host**: 6 of 6 measured steps …' where steps still ran on a busy host after their
    retries — on the first screen, not only among the caveats: every number of those steps
    carries the other load ('' when none).

    >>> busy_line(pd.DataFrame({"host_busy": [True, False, True]}))
    '**Busy host**: 2 of 3 measured steps ran while other processes or the hypervisor took the CPU: their numbers carry that load (the caveats say how much)'
    """
    if steps is None or "host_busy" not in steps or not len(steps):
        return ""
    busy = int(steps["host_busy"].fillna(False).astype(bool).sum())
    return (f"**Busy host**: {busy} of {len(steps)} measured steps ran while other processes or the hypervisor "
            "took the CPU: their numbers carry that load (the caveats say how much)") if busy else ""


def verdict_summary(said: Answer) -> pd.DataFrame:
    """The verdicts in one table, a row per verdict table of the answer (its words → key): what
    was compared with what, how many cells, the count of each word, the cells left short of
    the target, the largest effect (`findings.Findings.largest`: as the glance says it) and the
    minimum detectable effect in the median cell. Words no table has are left out."""
    rows = []
    short = findings.short_cells(said.tables, [c.key for c in said.comparisons])
    known = {c.key: c for c in said.comparisons}
    for name, key in said.verdicts.items():
        rel = said.tables.get(key)
        if not isinstance(rel, pd.DataFrame) or rel.empty:
            continue
        f = findings.of_table(known.get(key) or Comparison(key, "", True, name), rel, short)
        pairs = (rel["candidate"] + " vs " + rel["baseline"]) if "baseline" in rel else rel["candidate"]
        tested = rel[rel["delta_pct"].notna()]
        mde = tested["mde_pct"].median() if "mde_pct" in tested and len(tested) else float("nan")
        big = f.largest()
        rows.append({"comparison": name, "compared": "; ".join(dict.fromkeys(pairs)), "cells": len(f.rows),
                     **f.counts(), "short of target": len(f.short()),
                     "largest difference": f"{big.entry} ({big.where})" if big is not None else "–",
                     "MDE, median cell": stats.mde_text(mde) if mde == mde else "–"})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    fixed = ("comparison", "compared", "cells", "short of target", "largest difference", "MDE, median cell")
    words = [w for w in out.columns if w not in fixed]
    words = [*(w for w in findings.WORDS if w in words), *(w for w in words if w not in findings.WORDS)]
    out[words] = out[words].fillna(0).astype(int)
    keep = ["comparison", "compared", "cells", *words,
            *(["short of target"] if out["short of target"].any() else []), "largest difference", "MDE, median cell"]
    return out[keep]


def _f_words(said: Answer, c: Any) -> str:
    """'; sysbench used 0.52–0.98 µs of CPU per µs the server used (f): …' for the server's own
    cost line (`c`: its comparison, whose table names the baseline), with the one formula the
    report's server view uses (`server_view`)."""
    rel = said.tables.get(c.key)
    f = budget.client_per_server(said.tables.get("steps"), rel["baseline"].iloc[0]) \
        if rel is not None and len(rel) and "baseline" in rel else pd.Series(dtype=float)
    if f.empty:
        return ""
    span = f"{f.min():.2f}" if f.min().round(2) == f.max().round(2) else f"{f.min():.2f}–{f.max():.2f}"
    return (f"; sysbench used {span} µs of CPU per server µs (f): on full shared CPUs a server change k "
            "moves QPS by about 1 ÷ (1 + k ÷ (1 + f)) − 1")


def _client_note(said: Answer, run: Run) -> str:
    """One line where the run's CPU budget puts most of a judged throughput change on the
    client (`budget.client_explained`): how many such cells, and what that means."""
    key = throughput(said.comparisons)
    p = params_of(run)
    cpus = cpus_shared(p, run.record.host.cpus)
    if not key or not cpus:
        return ""
    client = budget.client_explained(budget.judged_budget(said.tables, key, cpus), pinned_apart(p))
    if client is None or client.empty:
        return ""
    n = len(client)
    return (f"**Client and server share {cpus} CPUs**: in {n} judged cell{'s' if n != 1 else ''} most of the "
            "change in CPU per transaction is sysbench's own: QPS there measures both")
