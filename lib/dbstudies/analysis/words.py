"""The answer in words: what the verdict tables say, per metric and candidate, in sentences a
reader can quote — where the candidate is better, worse or no different (which cells, how
much) — and the one word each cell is said with (`word_of`). A source's claims tested against
them: `claims`."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .. import stats

WIDE = 10.0  # an interval whose ends are more than 10× apart bounds nothing a reader can use

KEYS = ("workload", "threads", "offered", "query")   # what names a cell, in this order


# ---------------------------------------------------------------- one word per cell

def field(r: Any, key: str) -> Any:
    """A comparison row's value, whether the row is a Series or dict (`apply`) or a tuple
    (`itertuples`); None where it has no such field."""
    return r.get(key) if isinstance(r, (pd.Series, dict)) else getattr(r, key, None)


def adjusted(r: Any) -> tuple[str, str]:
    """The interval columns to show beside a Holm verdict: the Holm-adjusted ones where the
    table has them (`stats.holm_intervals`), else the raw CI's."""
    value = field(r, "holm_ci_low")
    return ("holm_ci_low", "holm_ci_high") if value is not None and value == value else ("ci_low", "ci_high")


def _threshold_pct(r: Any) -> float:
    """The draw threshold a row's reading used, in % (a table read before it was recorded: 5)."""
    v = field(r, "threshold_pct")
    return float(v) if v is not None and v == v else stats.THRESHOLD * 100


# the words a cell is said with, in every view and in this order: a Holm verdict (better,
# worse), else what a draw's Holm-adjusted interval shows — inside the draw band (same), inside
# a precision target's band only (within target), or reaching past the band (inconclusive)
WORDS = ("better", "worse", "same", "within target", "inconclusive")


def word_of(r: Any) -> str:
    """The one word every view says a cell with (`WORDS`), whatever the metric: better or
    worse; a draw whose interval lies inside the draw band `same`, inside a precision target's
    band only `within target`, reaching past the band (or unbounded) `inconclusive`; else not
    judged, not available (…).

    >>> [word_of(pd.Series({"verdict": "draw", "ci_low": lo, "ci_high": hi, "threshold_pct": 5.0}))
    ...  for lo, hi in ((0.97, 1.04), (0.663, 1.012))]
    ['same', 'inconclusive']
    >>> word_of(pd.Series({"verdict": "draw", "reading": "bounded"})), word_of(pd.Series({"verdict": "worse"}))
    ('within target', 'worse')
    >>> word_of(pd.Series({"verdict": "timeout (censored: not tested)"}))
    'timeout'
    """
    reading = field(r, "reading")
    verdict = str(field(r, "verdict"))
    if verdict == "draw" and reading in ("same", "bounded", "undecided"):
        return {"same": "same", "bounded": "within target", "undecided": "inconclusive"}[reading]
    if verdict == "draw":
        lo, hi = (field(r, c) for c in adjusted(r))
        return "same" if stats.within(lo, hi, _threshold_pct(r) / 100) else "inconclusive"
    if verdict in stats.VERDICTS or verdict.startswith("not available"):
        return verdict if verdict in stats.VERDICTS else "not available"
    word = verdict.split(":")[0]  # its why stays in the tables: 'not judged', 'timeout' (censored: …)
    return word.split(" (")[0] if "(" in word and ")" not in word else word


# ---------------------------------------------------------------- sizes and cells in words

def percent(x: float) -> str:
    """A size as the sentences say it: 2 significant digits below 10, whole numbers above.

    >>> percent(7.04), percent(24.8), percent(0.42), percent(1234.5)
    ('7.0', '25', '0.42', '1,234')
    """
    if abs(x) < 0.01:
        return "< 0.01" if x else "0"
    if 99.5 <= abs(x) < 100:  # not "100 % lower": that would be none at all
        return f"{x:.1f}"
    return f"{x:,.0f}" if abs(x) >= 10 else f"{x:.2g}" if abs(x) < 1 else f"{x:.1f}"


def span(values: list[float]) -> str:
    """Sizes as a range, '7.0–25 %', or one '25 %'."""
    lo, hi = percent(min(values)), percent(max(values))
    return f"{lo} %" if lo == hi else f"{lo}–{hi} %"


def listing(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def thread_words(chosen: list[int], every: list[int]) -> str:
    """Which client thread counts, against all the table has.

    >>> every = [1, 16, 64, 256]
    >>> thread_words([16, 64, 256], every), thread_words([1], every), thread_words([1, 16], every)
    ('from 16 client threads up', 'at 1 client thread', 'up to 16 client threads')
    >>> thread_words(every, every), thread_words([1, 64], every)
    ('at every client thread count', 'at 1 and 64 client threads')
    """
    chosen, every = sorted(chosen), sorted(every)
    if chosen == every and len(every) > 1:
        return "at every client thread count"
    if len(chosen) > 1 and chosen == [t for t in every if t >= chosen[0]]:
        return f"from {chosen[0]} client threads up"
    if len(chosen) > 1 and chosen == [t for t in every if t <= chosen[-1]]:
        return f"up to {chosen[-1]} client threads"
    return f"at {listing([str(t) for t in chosen])} client thread" + ("" if chosen == [1] else "s")


def _value(key: str, v: Any) -> str:
    if key == "query":
        return f"Q{int(v)}"
    return str(v)


def where(sub: pd.DataFrame, full: pd.DataFrame) -> str:
    """The cells of `sub` in words, against the table `full` they come from: client thread
    counts per workload (merged where the workloads agree), else the values of the keys that
    vary (a key with one value in the whole table goes unsaid)."""
    keys = [k for k in KEYS if k in full and full[k].nunique() > 1]
    if not keys:
        return ""
    if "threads" in keys:
        others = [k for k in keys if k != "threads"]
        every = sorted(int(t) for t in full["threads"].dropna().unique())
        if not others:
            return thread_words(sorted(int(t) for t in sub["threads"].unique()), every)
        groups = {name: sorted(int(t) for t in g["threads"].unique())
                  for name, g in sub.groupby(others, sort=False)}
        label = {n: " ".join(_value(k, v) for k, v in zip(others, n if isinstance(n, tuple) else (n,)))
                 for n in groups}
        if len(set(map(tuple, groups.values()))) == 1:
            threads = thread_words(next(iter(groups.values())), every)
            all_groups = full.groupby(others, sort=False).ngroups
            if len(groups) == all_groups:
                return threads + (" in both workloads" if all_groups == 2 else " in every workload")
            return f"{threads} in {listing([label[n] for n in groups])}"
        return listing([f"in {label[n]} {thread_words(t, every)}" for n, t in groups.items()])
    if len(sub) == len(full):
        return "in every cell"
    said = [listing([_value(k, v) for v in dict.fromkeys(sub[k].dropna())]) for k in keys]
    return ", ".join(f"at {t} offered" if k == "offered" else f"in {t}" for k, t in zip(keys, said))


def _cells(n: int, of: int) -> str:
    return f"{n} of {of} cells" if n != of else (f"all {of} cells" if of > 2 else
                                                  "both cells" if of == 2 else "the only cell")


def client_clause(sub: pd.DataFrame, client: pd.DataFrame | None, cpus: int) -> str:
    """What a verdict's own run data attribute to the client, said beside it: in which of
    `sub`'s judged cells (one candidate) the CPU budget puts most of the change in CPU per
    transaction on sysbench (`client`: `budget.client_explained` rows); "" where none.

    >>> sub = pd.DataFrame({"workload": ["w", "w"], "threads": [16, 64], "candidate": ["p", "p"]})
    >>> client_clause(sub, pd.DataFrame({"workload": ["w"], "threads": [64], "candidate": ["p"], "client_share_pct": [71.0]}), 2)
    "— in 1 of these 2 cells 71 % of the change in CPU per transaction is sysbench's own and 29 % the server's, on the same 2 CPUs as the server: mostly the client's cost"
    """
    if client is None or client.empty or sub.empty:
        return ""
    hit = sub.merge(client, on=["workload", "threads", "candidate"])
    if hit.empty:
        return ""
    which = ("in this cell" if len(sub) == 1 else f"in {len(hit)} of these {len(sub)} cells" if len(hit) < len(sub)
             else "in both these cells" if len(sub) == 2 else f"in all {len(sub)} of these cells")
    return (f"— {which} {share_words(hit['client_share_pct'].tolist())}, on the same {cpus} CPUs as the "
            "server: mostly the client's cost")


def share_words(shares: list[float]) -> str:
    """The client's share of a change in CPU per transaction, said as what it is: a share up
    to 100 %, and over it the client's own growth outrunning the whole change.

    >>> share_words([59.0, 81.0]), share_words([68.0, 115.0])
    ("59–81 % of the change in CPU per transaction is sysbench's own and 19–41 % the server's", "of the change in CPU per transaction, sysbench's own is 68–115 % — over 100 %: the server's own went the other way")
    >>> share_words([100.0])
    "100 % of the change in CPU per transaction is sysbench's own"
    """
    if max(shares) >= 100.5:  # as said: 100 % is all of it
        return (f"of the change in CPU per transaction, sysbench's own is {span(shares)} — over 100 %: the "
                "server's own went the other way")
    server = [100 - x for x in shares]
    rest = f" and {span(server)} the server's" if max(server) >= 0.5 else ""  # both shares: the server's too
    return f"{span(shares)} of the change in CPU per transaction is sysbench's own{rest}"


def candidate_clause(rel: pd.DataFrame, full: pd.DataFrame | None = None,
                     client: pd.DataFrame | None = None, cpus: int = 0) -> str:
    """One candidate's comparisons in a clause: where it is better, worse, no different
    (its cells named against `full`, the table they come from; default `rel`), each judged
    part with what the run's own CPU budget attributes to the client (`client_clause`)."""
    full = rel if full is None else full
    out = []
    tested = rel[rel["verdict"].isin(stats.VERDICTS)]
    total = len(tested)
    for verdict in ("better", "worse"):
        sub = tested[tested["verdict"] == verdict]
        if sub.empty:
            continue
        ups, downs = sub[sub["delta_pct"] > 0], sub[sub["delta_pct"] < 0]
        for part, word in ((ups, "higher"), (downs, "lower")):
            if len(part):
                out.append(" ".join(x for x in (span(part['delta_pct'].abs().tolist()), word, f"({verdict})",
                                                 where(part, full), f"({_cells(len(part), total)})",
                                                 client_clause(part, client, cpus)) if x))
    draws = tested[tested["verdict"] == "draw"]
    word = pd.Series([word_of(r) for r in draws.itertuples(index=False)], index=draws.index, dtype=object)
    reading = draws["reading"] if "reading" in draws else pd.Series("", index=draws.index)
    equal = draws[word == "same"]
    if len(equal):  # the interval inside the draw threshold's band
        band = stats.bounds_text(_threshold_pct(equal.iloc[0]) / 100)
        out.append(" ".join(x for x in (f"the same within {band}", where(equal, full),
                                         f"({_cells(len(equal), total)})") if x))
    target = stats.bounds_text(float(draws["target_pct"].iloc[0]) / 100) if "target_pct" in draws and len(draws) else ""
    bounded = draws[word == "within target"]
    if len(bounded):  # inside the target's band, not the threshold's: neither shown
        out.append(" ".join(x for x in (f"within the target's {target}", where(bounded, full),
                                         f"({_cells(len(bounded), total)}: not shown to exceed "
                                         f"{_threshold_pct(bounded.iloc[0]):g} %, nor to be under it)") if x))
    past = draws[word == "inconclusive"]
    aimed = reading.loc[past.index] == "undecided"
    wide = past[aimed & (past["more_pairs"] == 0)] if "more_pairs" in past else past.iloc[:0]
    if len(wide):  # precise to the target, yet its interval reaches past it
        out.append(" ".join(x for x in ("inconclusive", where(wide, full), f"({_cells(len(wide), total)}: precise to "
                                         f"the target, but the interval reaches past {target})") if x))
    open_ = past[aimed & ~past.index.isin(wide.index)]
    if len(open_):  # measured to a target and still above it
        more = open_["more_pairs"][open_["more_pairs"] < float("inf")].astype(int)
        need = ("out of reach" if more.empty else f"about {more.min()} more rounds would reach it" if more.min() == more.max()
                else f"about {more.min()}–{more.max()} more rounds would reach it")
        out.append(" ".join(x for x in ("inconclusive", where(open_, full),
                                         f"({_cells(len(open_), total)}: could see "
                                         f"±{stats.mde_text(open_['target_mde_pct'].median())} in the median one, "
                                         f"the target is {target}; {need})") if x))
    plain = past[~aimed]
    if len(plain):  # no target: what the draws could have seen, as their intervals show it
        bounded = plain[~(plain["ci_high"] / plain["ci_low"] > WIDE)] if {"ci_low", "ci_high"} <= set(plain) else plain
        mde = bounded["mde_pct"].dropna() if "mde_pct" in bounded else pd.Series(dtype=float)
        part = f" in {len(bounded)} of them, too few repeats to see any size in the others" \
            if len(bounded) < len(plain) else ""
        seen = (f": could see ±{stats.mde_text(mde.median())} in the median one{part}" if len(mde) and
                mde.median() <= 1000 else ": too few repeats to see any size" if len(mde) or part else "")
        shown = int((plain["p_holm"] < stats.ALPHA).sum()) if "p_holm" in plain else 0
        if shown:  # a difference the test sees, its size not shown beyond the band
            band = stats.bounds_text(_threshold_pct(plain.iloc[0]) / 100)
            seen += (f"; {'' if len(plain) == 1 else f'{shown} of them '}shown to differ (Holm p < {stats.ALPHA:g}), "
                     f"not whether by more than {band}")
        out.append(" ".join(x for x in ("inconclusive", where(plain, full),
                                         f"({_cells(len(plain), total)}{seen})") if x))
    unjudged = rel[~rel["verdict"].isin(stats.VERDICTS)]
    for word, part in unjudged.groupby(unjudged["verdict"].astype(str), sort=False):
        why = " (one pair or none: nothing to test a difference by)" if word == stats.NOT_JUDGED else ""
        out.append(" ".join(x for x in (word + why, where(part, full)) if x))
    return "; ".join(out)


def paragraph(name: str, rel: pd.DataFrame | None, client: pd.DataFrame | None = None, cpus: int = 0) -> str:
    """A verdict table (`name`: what it compares) in one Markdown paragraph; with `client`,
    each judged part says what the run's CPU budget attributes to the client (`client_clause`)."""
    if rel is None or rel.empty:
        return ""
    base = f" against {rel['baseline'].iloc[0]}" if "baseline" in rel else ""
    clauses = [f"{c} {candidate_clause(g, client=client, cpus=cpus)}" for c, g in rel.groupby("candidate", sort=False)]
    text = f"**{name[0].upper() + name[1:]}**{base}: " + "; ".join(clauses) + "."
    if name.startswith("A/A"):
        judged = rel["verdict"].isin(("better", "worse")).sum()
        text += (" As it should: the same configuration twice shows no difference." if not judged else
                 f" **{judged} false difference{'s' if judged != 1 else ''}**: this run's noise made a "
                 "difference out of nothing; treat verdicts of similar size with suspicion.")
    return text


def paragraphs(tables: dict[str, pd.DataFrame | None], client: dict[str, pd.DataFrame] | None = None,
               cpus: int = 0) -> list[str]:
    """Every verdict table (words → table) in its paragraph, in order; `client`: per table
    name, the cells whose verdict the run attributes mostly to the client."""
    client = client or {}
    return [t for t in (paragraph(name, rel, client.get(name), cpus) for name, rel in tables.items()) if t]


def moving_apart(tables: dict[str, pd.DataFrame | None], body: str = "p50 latency",
                 tails: tuple[str, ...] = ("p99 latency", "p95 latency")) -> list[str]:
    """Where a candidate's typical transaction (p50) and its tail (p99, else p95) moved in
    opposite directions, both judged: the trade-off in one Markdown paragraph per candidate,
    e.g. "a typical transaction (p50) takes 21–124 % longer, while the slowest 1 % (p99)
    take 46–73 % less time". [] where they move together or a table is missing."""
    b = tables.get(body)
    tail = next((t for t in tails if tables.get(t) is not None and not tables[t].empty), None)
    if b is None or b.empty or tail is None:
        return []
    t = tables[tail]
    share = "1 %" if tail.startswith("p99") else "5 %"
    judged = ("better", "worse")
    out = []
    m = b.merge(t, on=["workload", "threads", "candidate"], suffixes=("_body", "_tail"))
    for cand, g in m.groupby("candidate", sort=False):
        g = g[g["verdict_body"].isin(judged) & g["verdict_tail"].isin(judged)
              & (np.sign(g["delta_pct_body"]) * np.sign(g["delta_pct_tail"]) < 0)]
        parts = []
        for slower, cells in ((True, g[g["delta_pct_body"] > 0]), (False, g[g["delta_pct_body"] < 0])):
            if cells.empty:
                continue
            typical = f"{span(cells['delta_pct_body'].abs().tolist())} {'longer' if slower else 'less time'}"
            worst = f"{span(cells['delta_pct_tail'].abs().tolist())} {'less time' if slower else 'longer'}"
            parts.append(f"a typical transaction (p50) takes {typical}, while the slowest {share} "
                         f"({tail.split()[0]}) take {worst} — {where(cells, b)}")
        if parts:
            base = f" against {b['baseline'].iloc[0]}" if "baseline" in b else ""
            out.append(f"**Typical and slowest transactions move apart** with {cand}{base}: "
                       + "; ".join(parts) + ".")
    return out
