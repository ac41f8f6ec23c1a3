"""The sentences of a conclusion that do not depend on the study: the peak per workload, each
comparison's verdict counts with its largest difference and what it could detect, the A/A
table, the host. A study's `conclusion` strings them together with its own."""
from __future__ import annotations

from typing import Any

import pandas as pd

from .. import stats
from ..core.comparisons import SYSBENCH, Comparison, judged, throughput
from ..store.cpus import pinned_apart
from . import findings
from .cells import p_text, signed, threads, verdicts
from .words import share_words


def peak_lines(summ: pd.DataFrame) -> list[str]:
    """Per workload: each arm's highest median QPS of the thread counts measured, and at how
    many threads — a peak of a grid, which says nothing of the counts in between.

    >>> s = pd.DataFrame({"workload": ["w"] * 4, "arm": ["a", "a", "b", "b"], "threads": [1, 16] * 2,
    ...                   "qps_median": [10.0, 62120.0, 9.0, 50000.0]})
    >>> peak_lines(s)
    ['- **w**: the highest median QPS of the thread counts measured (1, 16): a 62,120 at 16 client threads; b 50,000 at 16 client threads.']
    """
    lines = []
    for w, g in summ.groupby("workload"):
        grid = ", ".join(str(int(t)) for t in sorted(g["threads"].unique()))
        per_arm = [f"{arm} {best.qps_median:,.0f} at {threads(best.threads)}"
                   for arm, a in g.groupby("arm", sort=False) for best in [a.loc[a["qps_median"].idxmax()]]]
        lines.append(f"- **{w}**: the highest median QPS of the thread counts measured ({grid}): "
                     + "; ".join(per_arm) + ".")
    return lines


def comparison_lines(tables: dict[str, pd.DataFrame], versus: str,
                     comparisons: tuple[Comparison, ...] = SYSBENCH) -> list[str]:
    """For each judged comparison with a table in `tables`: its findings' counts, largest
    effect (with its Holm p, and what the run's CPU budget attributes to the client in the
    throughput table, `tables["client"]`), as the glance says them (`findings.Findings`), and
    what the table can detect; then the cells left short of the target (`findings.short_line`). `versus`: how the comparison is
    named, e.g. 'pool vs per-connection'."""
    lines, found = [], []
    short = findings.short_cells(tables, [c.key for c in comparisons])
    for c in judged(comparisons):
        rel = tables.get(c.key)
        if rel is None or rel.empty:
            continue
        f = findings.of_table(c, rel, short)
        n = int((~rel["verdict"].astype(str).str.startswith("not available")).sum())
        big = f.largest()
        largest = (f.largest_text() if big is None else
                   f"{f.largest_text()[:-1]}, {_judged(pd.Series(big.row))}"
                   + _client(tables.get("client") if c.key == throughput(comparisons) else None, big) + ")")
        lines.append(f"- {c.words}, {versus} over {n} comparison{'s' if n != 1 else ''}: "
                     + "; ".join(x for x in (f.counts_text(), largest) if x) + ".")
        lines += [f"  - {stats.reach_short(rel)}."]
        found.append(f)
    short = findings.short_line(found, named=True)
    return lines + ([f"- {short}."] if short else [])


def _client(client: pd.DataFrame | None, big: findings.Finding) -> str:
    """'; 71 % of its change in CPU per transaction is sysbench's own: …' where the run's CPU
    budget attributes this judged cell mostly to the client (`budget.client_explained` rows)."""
    r = big.row
    if client is None or client.empty or not big.decisive:
        return ""
    hit = client[(client["workload"] == r["workload"]) & (client["threads"] == r["threads"])
                 & (client["candidate"] == r["candidate"])]
    if hit.empty:
        return ""
    return f"; {share_words([float(hit['client_share_pct'].iloc[0])])}, on the server's CPUs: mostly the client's cost"


def listed_comparisons(tables: dict[str, pd.DataFrame], words: dict[str, str], versus: str) -> list[str]:
    """For each table named in `words` (table → what it compares): its verdict counts, then
    every cell — candidate, difference, workload, threads, Holm p, verdict — and what the
    table can detect. `versus`: the baseline's name."""
    lines = []
    for metric, what in words.items():
        rel = tables.get(metric)
        if rel is None or rel.empty:
            continue
        same = (rel["ci_low"] == 1) & (rel["ci_high"] == 1)  # e.g. no stall in any repeat
        lines.append(f"- {what}, vs {versus}: {verdicts(rel)}"
                     + "".join(f"; {r.candidate} identical in every repeat ({r.workload}, {threads(r.threads)})"
                               if s else
                               f"; {r.candidate} {signed(r.delta_pct)} ({r.workload}, "
                               f"{threads(r.threads)}, {_judged(r)})"
                               for r, s in zip(rel.itertuples(), same)) + ".")
        if not same.all():
            lines += [f"  - {stats.reach_short(rel)}."]
    return lines


def _judged(r: Any, alpha: float = stats.ALPHA) -> str:
    """Holm p and the verdict, with why a significant difference is still a draw.

    >>> _judged(pd.Series({"p_holm": 0.029, "verdict": "draw"})), _judged(pd.Series({"p_holm": 0.3, "verdict": "draw"}))
    ('Holm p = 0.029, draw: significant, but within the draw threshold', 'Holm p = 0.3, draw')
    >>> _judged(pd.Series({"p_holm": float("nan"), "verdict": "not judged"}))
    'not judged: one pair, no test'
    """
    if pd.isna(r.p_holm):
        return f"{r.verdict}: one pair, no test"
    text = f"Holm p {p_text(r.p_holm)}, {r.verdict}"
    return text + (": significant, but within the draw threshold" if r.verdict == "draw" and r.p_holm < alpha else "")


def aa_line(aa: pd.DataFrame | None, baseline: str) -> list[str]:
    if aa is None or aa.empty:
        return []
    mde = aa["mde_pct"].median() if "mde_pct" in aa else float("nan")
    reach = f" (its median MDE {stats.mde_text(mde)}: only a false difference larger than that could have shown)" \
        if mde == mde else ""
    outcome = (f"no false difference{reach}" if (aa["verdict"] == "draw").all() else
               "**not all draw**: this run's noise produced a false difference; treat "
               "verdicts of similar size with suspicion")
    return [f"- A/A control ({baseline} twice, {len(aa)} cells): {verdicts(aa)} — {outcome}."]


def host_lines(summ: pd.DataFrame, p: Any, host_cpus: int) -> list[str]:
    """How much CPU server and client used (busy-host steps are a caveat: `caveats.busy`)."""
    cpu = summ[["cpu_server_pct", "cpu_client_pct"]].max()
    return [f"- CPU: server up to {cpu.cpu_server_pct:.0f} % and sysbench up to "
            f"{cpu.cpu_client_pct:.0f} % of one core on a {host_cpus}-CPU host"
            + ("; client and server share the CPUs, so high thread counts measure both."
               if not pinned_apart(p) else ".")]
