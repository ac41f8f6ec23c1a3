"""A comparison's cell in words, as every table and view says it: the verdict and its interval
(`cell_text`, `verdict_text`, `effect`, `interval` with the decimals a band's edge needs), the
cell's name, the sources' "relative results" layout (`layout`, `wide`), thread counts, p-values
and signed percentages.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from .. import stats
from .words import WIDE, WORDS, _threshold_pct, adjusted, field, word_of


def verdict_text(r: Any) -> str:
    """A comparison's verdict as a table says it: better, worse — or, for a draw, what its
    interval says (`word_of`), its band as applied: the same within the draw band, within a
    precision target's band (`target_text`), or inconclusive with what the cell could see.

    >>> verdict_text(pd.Series({"verdict": "draw", "reading": "same", "target_pct": 20.0, "threshold_pct": 5.0}))
    'the same within −4.8 … +5 %'
    >>> verdict_text(pd.Series({"verdict": "draw", "ci_low": 0.663, "ci_high": 1.012, "mde_pct": 27.0, "threshold_pct": 5.0}))
    'inconclusive: could see ±27 %'
    >>> verdict_text(pd.Series({"verdict": "draw", "ci_low": 0.97, "ci_high": 1.04, "threshold_pct": 5.0}))
    'the same within −4.8 … +5 %'
    """
    reading = field(r, "reading")
    word = word_of(r)
    if field(r, "verdict") != "draw" or word not in WORDS:
        return str(field(r, "verdict"))
    if word == "same":
        return f"the same within {stats.bounds_text(_threshold_pct(r) / 100)}"
    if reading in ("bounded", "undecided"):
        return target_text(r)
    mde = field(r, "mde_pct")  # no target: what the draw could have seen
    return (f"inconclusive: could see ±{stats.mde_text(mde)}" if mde is not None and mde == mde and mde <= 1000
            else "inconclusive: too few repeats to see any size")


def target_text(r: Any) -> str:
    """A draw of a cell measured to a precision target, in words: within the target's band
    (`bounded`), or inconclusive — precise to the target but past its band, or how many more
    rounds the target needs (`undecided`).

    >>> target_text(pd.Series({"verdict": "draw", "reading": "bounded", "target_pct": 20.0, "threshold_pct": 5.0}))
    "within the target's −16.7 … +20 %: not shown to exceed 5 %, nor to be under it"
    >>> target_text(pd.Series({"verdict": "draw", "reading": "undecided", "target_pct": 25.0,
    ...                        "target_mde_pct": 38.2, "more_pairs": 14}))
    'inconclusive: could see ±38 %, the target −20.0 … +25 % needs about 14 more rounds'
    >>> target_text(pd.Series({"verdict": "draw", "reading": "undecided", "target_pct": 5.0,
    ...                        "target_mde_pct": 4.9, "more_pairs": 0}))
    'inconclusive: precise to the target (could see ±4.9 %), but its interval reaches past −4.8 … +5 %'
    """
    target = stats.bounds_text(field(r, "target_pct") / 100)
    if field(r, "reading") == "bounded":
        return (f"within the target's {target}: not shown to exceed {_threshold_pct(r):g} %, "
                "nor to be under it")
    more = field(r, "more_pairs")
    if not more:
        return (f"inconclusive: precise to the target (could see ±{field(r, 'target_mde_pct'):.1f} %), but its "
                f"interval reaches past {target}")
    need = ("is out of reach" if not more < float("inf") else
            f"needs about {int(more)} more round{'s' if more != 1 else ''}")
    return f"inconclusive: could see ±{stats.mde_text(field(r, 'target_mde_pct'))}, the target {target} {need}"


def layout(rel: pd.DataFrame) -> pd.DataFrame:
    """The sources' "relative results" layout: threads down, one column per workload (one
    candidate), per candidate (one workload) or per both — each named "candidate vs baseline"
    where the table knows its baseline — each cell `+4.1 % [−1.0, +9.3] better`."""
    if rel.empty:
        return rel
    cell = rel.apply(cell_text, axis=1)
    many_c, many_w = rel["candidate"].nunique() > 1, rel["workload"].nunique() > 1
    pair = rel["candidate"] + " vs " + rel["baseline"] if "baseline" in rel else rel["candidate"]
    column = (pair + " · " + rel["workload"] if many_c and many_w or "baseline" in rel and many_w
              else pair if many_c or "baseline" in rel else rel["workload"])
    return wide(rel, cell, column)


def interval(r: Any, low: str = "ci_low", high: str = "ci_high") -> str:
    """A comparison's interval in %, '[−3.0, +9.2]'; '[unbounded: 2 pairs]' when its ends
    are more than `WIDE` times apart (too few pairs or repeats for this noise) — unless its
    verdict is better or worse: an interval that excludes no change says where, however wide.

    >>> interval(pd.Series({"ci_low": 0.97, "ci_high": 1.092, "n_baseline": 5}))
    '[−3.0, +9.2]'
    >>> interval(pd.Series({"ci_low": 0.0001, "ci_high": 4e8, "n_baseline": 2, "sd_diff": 1.0}))
    '[unbounded: 2 pairs]'
    >>> interval(pd.Series({"ci_low": 0.01, "ci_high": 0.5, "n_baseline": 4, "verdict": "better"}))
    '[−99.0, −50.0]'
    """
    lo, hi = field(r, low), field(r, high)
    decided = field(r, "verdict") in ("better", "worse") and lo > 0 and hi > 0  # it excludes no change: say where
    if not decided and (not (lo > 0 and hi > 0) or hi / lo > WIDE):
        n = field(r, "n_baseline")
        unit = "pair" if field(r, "sd_diff") is not None else "repeat"
        return f"[unbounded: {int(n)} {unit}{'s' if n != 1 else ''}]" if n == n and n is not None else "[unbounded]"
    d = digits(r)
    return f"[{signed((lo - 1) * 100, d).removesuffix(' %')}, {signed((hi - 1) * 100, d).removesuffix(' %')}]"


def digits(r: Any) -> int:
    """The decimals a row's effect is said with: those of the draw band it was judged by
    (`stats.decimals`: two for a count's 0.2 %) — one more where an end of its interval would
    print as the band's edge, so that an interval just past it never reads as a tie.

    >>> digits(pd.Series({"ci_low": 0.9523, "ci_high": 1.03, "threshold_pct": 5.0}))  # −4.77 %: just past −4.76
    2
    >>> digits(pd.Series({"ci_low": 0.96, "ci_high": 1.03, "threshold_pct": 5.0}))
    1
    """
    th = _threshold_pct(r)
    d = stats.decimals(th / 100)
    edges = ((1 / (1 + th / 100) - 1) * 100, th)
    for col in adjusted(r):
        v = field(r, col)
        if v is None or not v == v or v <= 0:
            continue
        end = (v - 1) * 100
        if any(round(end, d) == round(e, d) and abs(end - e) > 1e-9 for e in edges):
            return d + 1
    return d


def effect(r: Any, low: str = "ci_low", high: str = "ci_high") -> str:
    """A row's difference with its interval, as every view says it: '−3.4 % [−7.9, +1.3]'
    ('−0.18 % [−0.21, −0.15]' in a count's 0.2 % band).

    >>> effect(pd.Series({"delta_pct": -0.18, "ci_low": 0.9979, "ci_high": 0.9985, "threshold_pct": 0.2}))
    '−0.18 % [−0.21, −0.15]'
    """
    return f"{signed(field(r, 'delta_pct'), digits(r))} {interval(r, low, high)}"


def cell_text(r: Any, alpha: float = stats.ALPHA) -> str:
    """One comparison as a table cell: difference, its Holm-adjusted 95 % interval (both in
    %; the raw CI for tables without one), verdict — and why an interval that excludes 0
    is still a draw.

    >>> r = pd.Series({"delta_pct": -28.1, "ci_low": 0.570, "ci_high": 0.908, "p_holm": 0.2, "verdict": "draw",
    ...                "mde_pct": 45.0})
    >>> cell_text(r)
    '−28.1 % [−43.0, −9.2] inconclusive: could see ±45 % — not significant after Holm (p = 0.2)'
    >>> cell_text(pd.Series({**r, "holm_ci_low": 0.45, "holm_ci_high": 1.1}))
    '−28.1 % [−55.0, +10.0] inconclusive: could see ±45 %'
    >>> cell_text(pd.Series({**r, "delta_pct": 0.0, "ci_low": 1.0, "ci_high": 1.0}))
    'the same within −4.8 … +5 %: identical in every repeat'
    >>> cell_text(pd.Series({**r, "delta_pct": 4.0, "ci_low": 1.026, "ci_high": 1.045, "p_holm": 0.017}))
    '+4.0 % [+2.6, +4.5] the same within −4.8 … +5 % — significant, but within the draw threshold'
    """
    if pd.isna(r.delta_pct):
        return str(r.verdict)
    if r.verdict == stats.NOT_JUDGED:  # one pair: its difference, no interval, no test
        return f"{signed(r.delta_pct, digits(r))} not judged: one pair, no test"
    if r.ci_low == r.ci_high == 1:
        return f"{verdict_text(r)}: identical in every repeat"
    lo, hi = adjusted(r)
    text = f"{effect(r, lo, hi)} {verdict_text(r)}"
    if r.verdict == "draw" and not field(r, "reading") and (r[lo] > 1 or r[hi] < 1):
        text += (f" — not significant after Holm (p {p_text(r.p_holm)})" if r.p_holm >= alpha
                 else " — significant, but within the draw threshold")
    return text


CELL_KEYS = ("workload", "threads", "offered", "query", "all")  # what names a cell, where a table has it


def cell_name(r: Any) -> str:
    """A cell in words, from the keys a row has of `CELL_KEYS`.

    >>> cell_name({"workload": "oltp_point_select", "threads": 256}), cell_name({"query": 7})
    ('oltp_point_select, 256 client threads', 'Q7')
    """
    parts = []
    for key in CELL_KEYS:
        v = r.get(key) if hasattr(r, "get") else getattr(r, key, None)
        if v is None or v != v:
            continue
        parts.append(threads(int(v)) if key == "threads" else f"Q{int(v)}" if key == "query" else str(v))
    return ", ".join(parts)


def wide(frame: pd.DataFrame, cell: pd.Series, column: pd.Series) -> pd.DataFrame:
    """Threads down, one column per distinct `column` value (in the frame's order, not the
    alphabet's), `cell` text in each."""
    out = frame.assign(cell=cell, column=column).pivot(index="threads", columns="column", values="cell")
    return out[list(dict.fromkeys(column))].reset_index().rename_axis(columns=None)


def threads(n: int) -> str:
    return f"{n} client thread" + ("" if n == 1 else "s")


def verdicts(rel: pd.DataFrame) -> str:
    """A table's cells counted by their words (`word_of`), in `WORDS`' order, the band of
    'same' said as applied: '1 better, 1 the same within −4.8 … +5 %, 2 inconclusive'."""
    if rel.empty:
        return ""
    said = pd.Series([w if w in WORDS else str(r.verdict) for r in rel.itertuples(index=False)  # a censored
                      for w in [word_of(r)]], dtype=object).value_counts()  # query's verdict says why, whole
    same = f"the same within {stats.bounds_text(_threshold_pct(rel.iloc[0]) / 100)}"
    order = [*WORDS, *(w for w in said.index if w not in WORDS)]
    return ", ".join(f"{said[w]} {same if w == 'same' else w}" for w in order if w in said)


def p_text(p: float) -> str:
    """A p-value as the sentences say it, with its relation: '= 0.029', '< 0.001'.

    >>> p_text(0.029), p_text(2.6e-07)
    ('= 0.029', '< 0.001')
    """
    return "< 0.001" if p < 0.001 else f"= {p:.2g}"


def signed(pct: float, digits: int = 1) -> str:
    """A difference as the reports write it.

    >>> signed(-3.42), signed(17.2), signed(-0.183, 2)
    ('−3.4 %', '+17.2 %', '−0.18 %')
    """
    return f"{pct:+.{digits}f} %".replace("-", "−")
