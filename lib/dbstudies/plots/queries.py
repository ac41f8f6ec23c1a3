"""Figures of per-query and per-metric summaries: bars, min/max whiskers, per-query times
and per-query times normalised to a baseline (DBT3)."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import pandas as pd

from .axes import (
    MAX_W,
    PANEL_H,
    PANEL_W,
    _legend_below,
    _log_y,
    _mark_clipped,
    _panels,
    palette,
)


def bars(summary: pd.DataFrame, panels: dict[str, dict[str, str]], *, title: str = "",
         x: str = "arm") -> plt.Figure:
    """Grouped bars: one panel per entry of `panels` (panel title → {prefix: bar label}),
    per `x` one bar per prefix at its median over repeats with min–max whiskers, in the
    `x`'s colour (the same as in every other figure), the prefixes told apart by shade;
    `summary` has `x` and {prefix}_median/_min/_max."""
    from matplotlib.patches import Patch
    fig, axes = _panels(len(panels))
    xs = list(dict.fromkeys(summary[x]))
    colours = [palette(xs)[a] for a in xs]
    rows = summary.set_index(x).loc[xs]
    keys: dict[str, float] = {}
    for ax, (panel, prefixes) in zip(axes, panels.items()):
        n = len(prefixes)
        width = 0.8 / n
        for k, (prefix, label) in enumerate(prefixes.items()):
            alpha = 0.35 + 0.65 * k / (n - 1) if n > 1 else 1.0
            med = rows[f"{prefix}_median"]
            pos = [i + (k - (n - 1) / 2) * width for i in range(len(xs))]
            ax.bar(pos, med, width * 0.9, color=colours, alpha=alpha)
            ax.errorbar(pos, med, yerr=[med - rows[f"{prefix}_min"], rows[f"{prefix}_max"] - med],
                        fmt="none", ecolor="0.2", capsize=3, lw=1)
            if n > 1:
                keys[label] = alpha
        ax.set_xticks(range(len(xs)), xs)
        ax.set_ylabel("\n".join(textwrap.wrap(panel, 32)))
        ax.set_ylim(bottom=0)
    fig.suptitle((title + ": " if title else "") + "median over repeats, whiskers min–max", y=1.02)
    fig.tight_layout()
    if keys:
        fig.legend([Patch(facecolor="0.35", alpha=a) for a in keys.values()],
                   [f"{label} ({'light' if a < 1 else 'solid'})" for label, a in keys.items()],
                   loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(keys),
                   fontsize="small", frameon=False)
    fig.dbstudies_alt = (f"Bars of {', '.join(panels)} for {', '.join(map(str, xs))}: median over "
                         f"repeats with min–max whiskers.")
    return fig


def whiskers(summary: pd.DataFrame, metrics: dict[str, str], *, title: str = "") -> plt.Figure:
    """One panel per metric (prefix → label): median over repeats per arm with min–max
    whiskers; `summary` has arm and {prefix}_median/_min/_max."""
    fig, axes = _panels(len(metrics))
    arms = list(dict.fromkeys(summary["arm"]))
    colours = palette(arms)
    for ax, (prefix, label) in zip(axes, metrics.items()):
        for i, arm in enumerate(arms):
            r = summary[summary["arm"] == arm].iloc[0]
            med = r[f"{prefix}_median"]
            ax.errorbar([i], [med], yerr=[[med - r[f"{prefix}_min"]], [r[f"{prefix}_max"] - med]],
                        marker="o", capsize=4, color=colours[arm], ms=7)
        ax.set_xticks(range(len(arms)), arms)
        ax.set_xlim(-0.6, len(arms) - 0.4)
        # from zero to a tenth above the highest whisker: the autoscaled top, rescaled from
        # zero, can sit a pixel above a marker of a tight spread; all zero (no stall): up to 1
        high = summary[[f"{prefix}_max", f"{prefix}_median"]].max().max()
        top = max(float(high) * 1.1, 1) if high == high else 1
        ax.set_ylim(-0.04 * top, top)   # a marker at zero is not cut by the frame
        ax.set_ylabel("\n".join(textwrap.wrap(label, 32)))
    fig.suptitle((title + ": " if title else "") + "median over repeats, whiskers min–max", y=1.02)
    fig.tight_layout()
    fig.dbstudies_alt = (f"Median over repeats with min–max whiskers of {', '.join(metrics.values())} "
                         f"for {', '.join(arms)}.")
    return fig


def per_query(summary: pd.DataFrame, *, x: str = "query",
              title: str = "seconds per query: median, whiskers min–max (timed-out executions left out)"
              ) -> plt.Figure:
    """Seconds per query (or other `x`) and candidate (`arm`): the geometric mean (the
    tables' estimator) with min–max whiskers, log scale."""
    arms = list(dict.fromkeys(summary["arm"]))
    colours = palette(arms)
    xs = list(dict.fromkeys(summary[x]))
    labels = [f"Q{v}" if x == "query" else textwrap.fill(str(v), 16) for v in xs]
    per_tick = 0.45 * len(arms) if x == "query" else max(0.45 * len(arms), 1.4)  # room for long labels
    fig, ax = plt.subplots(figsize=(min(MAX_W, max(PANEL_W, per_tick * len(xs))), PANEL_H))
    w = 0.8 / len(arms)
    for i, a in enumerate(arms):
        part = summary[summary["arm"] == a].set_index(x).reindex(xs)
        pos = [j + (i - (len(arms) - 1) / 2) * w for j in range(len(xs))]
        med = part["geomean_s"]
        ax.errorbar(pos, med, yerr=[med - part["min_s"], part["max_s"] - med], fmt="o",
                    color=colours[a], capsize=2, label=a)
    ax.set_xticks(range(len(xs)), labels)
    _log_y(ax, summary["min_s"].min(), summary["max_s"].max())
    ax.set_ylabel("seconds")
    ax.set_title(title, fontsize="medium")
    _legend_below(fig, ax)
    fig.dbstudies_alt = (f"Seconds per {x} on a log scale for {', '.join(arms)}: geometric mean with "
                         f"min–max whiskers.")
    return fig


def normalised(summary: pd.DataFrame, baseline: str, *, x: str = "query", zoom: float | None = None,
               title: str = "") -> plt.Figure:
    """Each candidate's geometric mean as % of the baseline's (= 100 %) per `x`, a bar each —
    the estimate the study's verdicts test, so a bar and its table agree —, min/max whiskers
    (also over the baseline's geometric mean); `zoom`: only 100 ± zoom % is shown, as the
    sources' second chart does: a bar or whisker beyond it is cut at the edge, where a
    triangle and its value mark it."""
    cands = [a for a in dict.fromkeys(summary["arm"]) if a != baseline]
    colours = palette(list(dict.fromkeys(summary["arm"])))
    xs = list(dict.fromkeys(summary[x]))
    base = summary[summary["arm"] == baseline].set_index(x)["geomean_s"]
    width = min(MAX_W, max(PANEL_W, 0.45 * len(xs) * max(1, len(cands))))
    fig, ax = plt.subplots(figsize=(width, PANEL_H))
    w = 0.8 / max(1, len(cands))
    own = summary[summary["arm"] == baseline].set_index(x).reindex(xs)  # the baseline's spread
    if len(own.dropna(how="all")):
        b = base.reindex(xs)
        bpos = [j - 0.45 for j in range(len(xs))]
        blo, bhi = own["min_s"] / b * 100, own["max_s"] / b * 100
        if zoom:
            blo, bhi = blo.clip(100 - zoom, 100 + zoom), bhi.clip(100 - zoom, 100 + zoom)
        ax.errorbar(bpos, [100] * len(xs), yerr=[100 - blo, bhi - 100], fmt="D", ms=4, capsize=2,
                    lw=1, color=colours[baseline], label=f"{baseline} (= 100 %): its own min–max")
    for i, c in enumerate(cands):
        part = summary[summary["arm"] == c].set_index(x).reindex(xs)
        b = base.reindex(xs)
        med, lo, hi = (part["geomean_s"] / b * 100, part["min_s"] / b * 100, part["max_s"] / b * 100)
        pos = [j + (i - (len(cands) - 1) / 2) * w * 0.85 + 0.06 for j in range(len(xs))]
        if zoom:
            edge = (100 - zoom, 100 + zoom)
            _mark_clipped(ax, pos, med, edge)
            ends = pd.concat([lo.where((lo < edge[0]) & (med >= edge[0])),   # a cut bar's own
                              hi.where((hi > edge[1]) & (med <= edge[1]))])  # mark says it all
            _mark_clipped(ax, pos + pos, ends, edge, whisker=True)
            med, lo, hi = (v.clip(*edge) for v in (med, lo, hi))
        ax.bar(pos, med - 100, bottom=100, width=w * 0.9, color=colours[c], label=c)
        ax.errorbar(pos, med, yerr=[med - lo, hi - med], fmt="none", ecolor="0.2", capsize=2, lw=1)
    ax.axhline(100, color="0.2", lw=1)
    ax.set_xticks(range(len(xs)), [f"Q{v}" if x == "query" else str(v) for v in xs])
    ax.set_ylabel(f"% of {baseline}'s time")
    if zoom:
        ax.set_ylim(100 - zoom, 100 + zoom)
    else:
        ax.set_ylim(bottom=0)
    ax.set_title(textwrap.fill((title + ": " if title else "") + f"time (geometric mean) as % of {baseline} "
                               "(= 100 %), whiskers min–max; below 100 % is faster"
                               + (f"; zoomed to ±{zoom:g} % (▲ a bar beyond the edge, its value "
                                  "written; △ a whisker's end beyond it)" if zoom else ""), 90),
                 fontsize="medium")
    _legend_below(fig, ax)
    fig.dbstudies_alt = (f"Bar chart per query of each candidate's time (geometric mean) as a percentage of "
                         f"{baseline}'s, with min–max whiskers" + (f", zoomed to 100 ± {zoom:g} %" if zoom else "") + ".")
    return fig
