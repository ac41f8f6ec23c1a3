"""A source's findings tested here: what the study modelled on a source claims (`Claim`) and,
against this run's verdict tables, whether each claim was reproduced, contradicted, not shown
or not testable here — sizes side by side (`held`, `claims_held`)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..core.comparisons import SYSBENCH, server_cost
from .words import candidate_clause


@dataclass(frozen=True)
class Claim:
    """One finding of the source a study is modelled on, said so that a run can test it:
    in verdict table `table`, `candidate` (an arm label) against the baseline comes out
    `expected` ("better", "worse" or "draw") in the cells of `workloads` (None: all) with at
    least `min_threads` client threads. `source` names the write-up, `says` the finding in
    its words, `size` the sizes it reports ("" when it shows only a plot)."""
    source: str
    says: str
    table: str
    candidate: str
    expected: str
    size: str = ""
    workloads: tuple[str, ...] | None = None
    min_threads: int = 0
    note: str = ""                                    # what differs from the source's set-up
    sizes: tuple[float, float] | None = None          # the source's range of differences, in %
    client_apart: bool = False                        # the source ran the client on cores of its own


def held(claim: Claim, tables: dict[str, pd.DataFrame], client: pd.DataFrame | None = None,
         pinned: bool = True, cpus: int = 0, decides: pd.DataFrame | None = None) -> str:
    """One claim against this run: reproduced, contradicted, consistent (expected no
    difference, none found), not shown (only draws: no evidence either way beyond what their
    MDE could see), inconclusive or untested (what is missing), with sizes — or
    **not testable here** in throughput where the run's set-up differs from the source's in what
    the claim depends on: the source ran the client on cores of its own and this run did not
    (`claim.client_apart`, `pinned`), or the run's own CPU budget says the client decides
    every cell the claim rests on (`decides`: `budget.client_decides`) — one rule, whatever
    each cell's verdict, draws and better verdicts too; cells it decides among others are set
    aside and said so. Then what was tested is said instead, and the claim is tested in the
    server's own terms where the run compared its CPU per transaction (`in_server_terms`)."""
    rel = tables.get(claim.table)
    said = f"*{claim.source}*: {claim.says}" + (f" ({claim.size})" if claim.size else "")
    if rel is None or rel.empty:
        return f"{said} — **untested** here: this run has no such comparison."
    mine = rel[rel["candidate"] == claim.candidate]
    if mine.empty:
        return f"{said} — **untested** here: {claim.candidate} was not measured."
    cells = mine
    if claim.workloads is not None:
        cells = cells[cells["workload"].isin(claim.workloads)]
    if claim.min_threads:
        cells = cells[cells["threads"] >= claim.min_threads]
    if cells.empty:
        what = " or ".join(claim.workloads) if claim.workloads else "any workload"
        more = f" at {claim.min_threads} or more client threads" if claim.min_threads else ""
        return f"{said} — **untested** here: no cell of {what}{more} in this run."
    found = cells["verdict"].astype(str)
    here = candidate_clause(cells, mine, client, cpus)
    tested = f"What was tested: {claim.candidate} {here}."
    if claim.client_apart and not pinned:
        return (f"{said} — **not testable here** in throughput: the source ran sysbench on cores of its own, "
                f"this run on the same {cpus or 'few'} CPUs as the server, and the claim is about the server. {tested}"
                + in_server_terms(claim, tables, cells) + (f" ({claim.note})" if claim.note else ""))
    if decides is not None and len(decides):
        ruled = cells.merge(decides[["workload", "threads", "candidate"]], on=["workload", "threads", "candidate"])
        if len(ruled) == len(cells):  # one rule whatever the verdict: the client decides every cell
            return (f"{said} — **not testable here** in throughput: in {'this cell' if len(cells) == 1 else 'every cell it rests on'} "
                    f"this run's own CPU budget says sysbench, which shares the server's CPUs, decides the "
                    f"outcome; the claim is about the server. {tested}" + in_server_terms(claim, tables, cells)
                    + (f" ({claim.note})" if claim.note else ""))
        if len(ruled):
            keep = ~cells.set_index(["workload", "threads", "candidate"]).index.isin(
                ruled.set_index(["workload", "threads", "candidate"]).index)
            cells, aside = cells[keep], len(ruled)
            found = cells["verdict"].astype(str)
            here = (candidate_clause(cells, mine, client, cpus) + f"; {aside} cell{'s' if aside != 1 else ''} set "
                    "aside: there the client decides")
    outcome = _outcome(claim.expected, found)
    if claim.sizes and outcome in ("reproduced", "partly reproduced"):
        outcome += size_check(cells, *claim.sizes)
    return (f"{said} — **{outcome}** here: {claim.candidate} {here}."
            + (f" ({claim.note})" if claim.note else ""))


def _outcome(expected: str, found: pd.Series) -> str:
    """A claim's expected verdict against the verdicts found in its cells.

    >>> _outcome("better", pd.Series(["better", "draw"])), _outcome("draw", pd.Series(["draw"]))
    ('partly reproduced', 'consistent (no difference detected, which is weak evidence of none)')
    """
    other = {"better": "worse", "worse": "better"}.get(expected)
    if expected == "draw":
        return ("consistent (no difference detected, which is weak evidence of none)" if (found == "draw").all()
                else "contradicted")
    if (found == expected).all():
        return "reproduced"
    if (found == other).any():
        return "contradicted"
    # only draws: the run did not show it — which is not showing it false (the draws' MDE says how far it could see)
    return "partly reproduced" if (found == expected).any() else "not shown"


def in_server_terms(claim: Claim, tables: dict[str, pd.DataFrame], cells: pd.DataFrame) -> str:
    """A throughput claim the client sharing the server's CPUs keeps from testing, tested on
    the server's own CPU per transaction in the same cells (its `server_cpu` table): a server
    that keeps throughput up is one whose cost per transaction does not rise — '' where the run
    has no such table."""
    cost = tables.get(server_cost(SYSBENCH).key)
    if cost is None or cost.empty or claim.table not in ("qps", "tps"):
        return ""
    keys = ["workload", "threads", "candidate"]
    mine = cost.merge(cells[keys], on=keys)
    if mine.empty:
        return ""
    outcome = _outcome(claim.expected, mine["verdict"].astype(str))
    return (f" In server terms — its CPU per transaction, which the client sharing its CPUs does not decide — "
            f"the claim is **{outcome}**: the server's CPU per transaction with {claim.candidate}: "
            f"{candidate_clause(mine, cost)}.")


def size_check(cells: pd.DataFrame, lo: float, hi: float) -> str:
    """'' when every cell judged better or worse has an interval (Holm-adjusted where the
    table has one) that reaches the source's range of differences [lo, hi] (in %), else
    ' in direction, not in size (…)'.

    >>> t = pd.DataFrame({"verdict": ["worse", "worse"], "delta_pct": [-42.0, -44.0],
    ...                   "holm_ci_low": [0.5, 0.5], "holm_ci_high": [0.65, 0.62]})
    >>> size_check(t, -22, -22), size_check(t, -45, -40)
    (' in direction, not in size (the source’s −22 % lies outside this run’s interval in 2 of 2 cells)', '')
    """
    judged = cells[cells["verdict"].isin(("better", "worse"))]
    low, high = ("holm_ci_low", "holm_ci_high") if "holm_ci_low" in judged else ("ci_low", "ci_high")
    apart = judged[((judged[high] - 1) * 100 < lo) | ((judged[low] - 1) * 100 > hi)]
    if apart.empty:
        return ""
    theirs = f"{lo:+.3g} %" if lo == hi else f"{lo:+.3g} … {hi:+.3g} %"
    return (f" in direction, not in size (the source’s {theirs.replace('-', '−')} lies outside this "
            f"run’s interval in {len(apart)} of {len(judged)} cells)")


def claims_held(claims: list[Claim], tables: dict[str, pd.DataFrame], client: pd.DataFrame | None = None,
                pinned: bool = True, cpus: int = 0, decides: pd.DataFrame | None = None) -> list[str]:
    """Each claim of the study's source(s) as this run finds it (`held`)."""
    return [held(c, tables, client, pinned, cpus, decides) for c in claims]
